"""Unit tests of core/values: records, resources, specs, config, errors, naming."""
