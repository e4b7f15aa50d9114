"""The scheduler's in-memory model of the cluster: store, pod states, gang table, queue, victim book, views, restore."""
