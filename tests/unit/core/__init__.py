"""Unit tests of gangsched.core, one package per core package (tests/unit/core/<package>/)."""
