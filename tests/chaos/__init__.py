"""Chaos tests: the operator against an emulator injecting faults, seeded and replayable."""
