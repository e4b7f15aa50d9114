"""Unit tests of core/values: resources, gang declarations, config, errors, naming."""
