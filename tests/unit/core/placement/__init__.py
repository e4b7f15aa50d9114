"""Unit tests of core/placement: where a gang's members go (packing, quorum, mixed sizes, ranks, topology groups)."""
