"""Unit tests of gangsched.models: API objects and config parsed into values (gangs, PodGroups, topology)."""
