"""Conformance tests: the emulator behaves as kube-apiserver 1.32 does (each test cites the Kubernetes source)."""
