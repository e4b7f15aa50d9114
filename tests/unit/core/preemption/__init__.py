"""Unit tests of core/preemption: victims, reclaimed reservations, refusals, PodDisruptionBudgets."""
