"""Gang rules: what an attempt of a gang must achieve, and the gangs' life beyond one attempt.

One attempt of a gang (quorum, roles, minResources, Strict/NonStrict, gang groups) or of a pod scheduled alone;
members not ready to be placed; partially bound Strict gangs; NonStrict deadlocks; capacity held for a starving
gang; runtime gang health (members lost below minMember).
"""

from gangsched.core.gang.deadlock import resolve_deadlocks
from gangsched.core.gang.gang_rules import attempt_gang, schedule_alone
from gangsched.core.gang.health import check_health, health_wakeup
from gangsched.core.gang.partial_gangs import evict_partial
from gangsched.core.gang.readiness import report_unsupported
from gangsched.core.gang.starvation import first_in_level, hold_capacity, hold_wakeup, lifted

__all__ = [
    "attempt_gang",
    "check_health",
    "evict_partial",
    "first_in_level",
    "health_wakeup",
    "hold_capacity",
    "hold_wakeup",
    "lifted",
    "report_unsupported",
    "resolve_deadlocks",
    "schedule_alone",
]
