"""Label and annotation keys that declare gangs on pods and PodGroups.

Contract: constants only, the single place these strings are spelled: scheduler-plugins' PodGroup label,
Koordinator's `gang.scheduling.koordinator.sh/*` annotations (and the timeout annotation written on timed-out
members), the older coscheduling label and annotations, gangsched's own role key, the Volcano-style group-name
annotation with LeaderWorkerSet's size and Volcano's task, and Kueue's plain-pod group label and total count.
Their upstream sources: docs/modules.md#modelskeyspy.
"""

from __future__ import annotations

from typing import Final

# scheduler-plugins
POD_GROUP_LABEL: Final = "scheduling.x-k8s.io/pod-group"

# Koordinator
KOORD_NAME: Final = "gang.scheduling.koordinator.sh/name"
KOORD_MIN_AVAILABLE: Final = "gang.scheduling.koordinator.sh/min-available"
KOORD_TOTAL_NUMBER: Final = "gang.scheduling.koordinator.sh/total-number"
KOORD_WAITING_TIME: Final = "gang.scheduling.koordinator.sh/waiting-time"
KOORD_MODE: Final = "gang.scheduling.koordinator.sh/mode"
KOORD_GROUPS: Final = "gang.scheduling.koordinator.sh/groups"
KOORD_TIMEOUT: Final = "gang.scheduling.koordinator.sh/timeout"  # written by the scheduler: "true"
KOORD_PREFIX: Final = "gang.scheduling.koordinator.sh/"
KOORD_MATCH_POLICY: Final = "gang.scheduling.koordinator.sh/match-policy"
KOORD_MATCH_POLICY_ALIAS: Final = "pod-group.scheduling.sigs.k8s.io/match-policy"  # Koordinator's alias
KOORD_NETWORK_TOPOLOGY_SPEC: Final = "gang.scheduling.koordinator.sh/network-topology-spec"  # JSON
KOORD_NETWORK_TOPOLOGY_INDEX: Final = "gang.scheduling.koordinator.sh/network-topology-index"  # the rank

# the older coscheduling forms
LEGACY_POD_GROUP: Final = "pod-group.scheduling.sigs.k8s.io"  # label (or annotation) naming the gang
LEGACY_NAME: Final = "pod-group.scheduling.sigs.k8s.io/name"
LEGACY_MIN_AVAILABLE: Final = "pod-group.scheduling.sigs.k8s.io/min-available"

# gangsched
ROLE: Final = "scheduling.gangsched.io/role"  # the member's role, matched against PodGroup spec.roles[].name
# how long the pod runs at most, a Go duration ("10m"): lets it backfill capacity held for a starving gang
EXPECTED_DURATION: Final = "scheduling.gangsched.io/expected-duration"

# gangsched: runtime gang health (core/gang/health.py), the annotation form of PodGroup spec.staleGracePeriodSeconds and
# spec.stalePolicy (they win over the spec)
STALE_GRACE_PERIOD: Final = "scheduling.gangsched.io/stale-grace-period"  # a Go duration, e.g. "30s"
STALE_POLICY: Final = "scheduling.gangsched.io/stale-policy"  # Report | Evict

# gangsched: network topology of an annotation-only gang (the PodGroup's spec.networkTopology otherwise)
TOPOLOGY_MODE: Final = "scheduling.gangsched.io/network-topology-mode"  # hard | soft
TOPOLOGY_HIGHEST_TIER: Final = "scheduling.gangsched.io/highest-tier-allowed"  # integer >= 1
TOPOLOGY_GROUP_SIZE: Final = "scheduling.gangsched.io/group-size"  # ranks per data-parallel group, >= 1

# Volcano-style gangs (the member count from LeaderWorkerSet when no other source sets it)
VOLCANO_GROUP_NAME: Final = "scheduling.k8s.io/group-name"  # annotation naming the gang
LWS_SIZE: Final = "leaderworkerset.sigs.k8s.io/size"  # annotation (or label): pods per LWS group
# a Volcano job pod's task (volcano.sh/apis batch/v1alpha1 TaskSpecKey; annotation, else label): its role
VOLCANO_TASK_SPEC: Final = "volcano.sh/task-spec"

# Kueue plain-pod groups
KUEUE_GROUP_NAME: Final = "kueue.x-k8s.io/pod-group-name"  # label naming the gang
KUEUE_GROUP_TOTAL_COUNT: Final = "kueue.x-k8s.io/pod-group-total-count"  # annotation: pods in the group
