"""Unit tests of core/topology: the topology tree and the placer over it."""
