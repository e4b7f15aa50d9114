"""Fit: kube-scheduler parity for one pod on one node (filters, affinity, spread, scores) and per-class capacity."""
