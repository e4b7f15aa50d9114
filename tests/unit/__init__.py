"""Unit tests: pure functions and in-memory structures, no network."""
