"""Integration tests: the operator, clients and writers over HTTP against the in-process emulator."""
