"""Preemption: victims for a gang or a pod that does not fit, PDBs, reclaiming lower-priority reservations."""
