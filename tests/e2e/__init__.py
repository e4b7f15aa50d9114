"""End-to-end tests: the real kubectl binary against the emulator."""
