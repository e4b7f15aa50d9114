"""Unit tests of core/devices: CEL selectors, the structured allocator (upstream's table) and its ledger."""
