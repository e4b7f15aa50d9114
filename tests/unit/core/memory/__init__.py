"""Unit tests of core/memory: the scheduler's state (store, pod states, gang table, queue, restore)."""
