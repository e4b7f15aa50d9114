"""Placement: which node each pod of a unit goes to, on the cycle's workspace.

Node pickers for one scheduling class, exact quorum search for gangs of several classes or roles, packing and
network-topology placement of a whole gang, spread and preferred-affinity placement, and late members placed
near their satisfied gang. No gang rules here (core/gang decides what must be placed) and no preemption.
"""

from gangsched.core.placement.late_members import hard_domain, place_near_gang
from gangsched.core.placement.pickers import Placed
from gangsched.core.placement.placement import nominated_fit, place

__all__ = ["Placed", "hard_domain", "nominated_fit", "place", "place_near_gang"]
