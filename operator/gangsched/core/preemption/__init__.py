"""Preemption: which lower-priority pods a gang or a pod that does not fit should evict, and where it then goes.

Group preemption for gangs (one or several scheduling classes), preemption for a pod scheduled alone, the
PodDisruptionBudgets that protect pods, and reclaiming reservations and nominations held at a lower priority.
"""

from gangsched.core.preemption.preempt_alone import preempt_alone
from gangsched.core.preemption.preempt_gang import (
    preempt,
    release_lower_nominations,
    release_nominations,
    settle_nominations,
)
from gangsched.core.preemption.preempt_pdb import PdbBudget, pdb_protects
from gangsched.core.preemption.reclaim import reclaim

__all__ = [
    "PdbBudget",
    "pdb_protects",
    "preempt",
    "preempt_alone",
    "reclaim",
    "release_lower_nominations",
    "release_nominations",
    "settle_nominations",
]
