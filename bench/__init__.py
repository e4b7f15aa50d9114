"""Benchmarks of gangsched; see bench/run.py."""
