"""Placement: which node each pod of a unit goes to (pickers, quorum, topology, late members, spread, scores)."""
