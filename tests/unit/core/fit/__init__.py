"""Unit tests of core/fit: node filters and scores (kube-scheduler parity): affinity, spread, pod counts."""
