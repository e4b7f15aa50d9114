"""Unit tests of gangsched.sim: the emulator's cluster, OpenAPI, schemas and tables."""
