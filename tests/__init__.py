"""The test suite: unit, integration, e2e (real kubectl), conformance and chaos tests (fixtures in conftest.py)."""
