"""The Kopf side of the operator: thin handlers that hand watch events to the runtime, and nothing else.

Contract:
- `build_registry()` returns a fresh Kopf registry whose handlers take the `Operator` from `memo.operator`: login
  (the operator client's credential source), startup/cleanup (the operator's own tasks; the Lease released), a
  Kopf probe only if configured, and `on.event` for the PodGroup kinds served, nodes, namespaces,
  PodDisruptionBudgets, PersistentVolumeClaims and PersistentVolumes, handing the raw object to the state cache.
  Nothing else happens here: no patches, no finalizers, no progress annotations.
- Pods and the topology ConfigMap are not watched through Kopf (the operator's own reflectors are); every handler
  that touches the operator is `async def` (the cache and the state are not thread-safe).
- `configure(settings)` makes Kopf cheap and silent; `quiet_optional_kinds()` drops its "Unresolved resources"
  warning about the optional PodGroup kinds only. More: docs/modules.md#handlerskopf_apppy.
"""

from __future__ import annotations

import logging
import re
from typing import Any, cast

import kopf

from gangsched.runtime.operator import Operator

log = logging.getLogger(__name__)


def configure(settings: kopf.OperatorSettings) -> None:
    """Kopf settings for an operator that only observes through Kopf."""
    settings.posting.enabled = False  # our own event recorder writes events; Kopf's handler logs would be noise
    settings.scanning.disabled = True  # the resources we watch are fixed; no CRD/namespace scanning
    settings.queueing.idle_timeout = 5.0  # per-object workers of rarely changing objects go away soon
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.reconnect_backoff = 0.5
    # Nothing is persisted on the objects: event handlers need no progress storage or diff-base, and a
    # non-default annotation prefix keeps Kopf's own keys away from everything we might ever write.
    settings.persistence.finalizer = "gangsched.io/kopf-finalizer"
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="kopf.gangsched.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix="kopf.gangsched.io")


OPTIONAL_GROUPS = frozenset({"scheduling.volcano.sh", "scheduling.sigs.k8s.io"})  # PodGroup kinds read if installed
UNRESOLVED = "Unresolved resources cannot be served"
KOPF_OBSERVATION = "kopf._core.reactor.observation"


class OptionalKindsFilter(logging.Filter):
    """Drops Kopf's WARNING about unresolved resources when they are only the optional PodGroup kinds: the operator
    names a missing optional kind once at INFO itself (runtime/operator.py); any other kind still warns."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(UNRESOLVED):
            return True
        groups = re.findall(r"group='([^']*)'", record.getMessage())
        return not groups or not OPTIONAL_GROUPS.issuperset(groups)


def quiet_optional_kinds() -> None:
    """Install OptionalKindsFilter on Kopf's observation logger (once per process)."""
    logger = logging.getLogger(KOPF_OBSERVATION)
    if not any(isinstance(f, OptionalKindsFilter) for f in logger.filters):
        logger.addFilter(OptionalKindsFilter())


def _operator(memo: Any) -> Operator:
    op = memo.get("operator") if isinstance(memo, dict) else getattr(memo, "operator", None)
    if not isinstance(op, Operator):
        raise kopf.PermanentError("the operator was started without memo.operator")
    return op


def _raw(event: kopf.RawEvent) -> dict[str, Any]:
    """The watched object as the plain dict the API sent (Kopf hands it over untouched)."""
    return cast(dict[str, Any], event["object"])


def build_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(memo: Any, **_: Any) -> kopf.ConnectionInfo:
        # the operator's own credential source (k8s/credentials.py): refreshed tokens, with an expiration so
        # that Kopf logs in again before they go stale (and after a 401)
        return kopf.ConnectionInfo(**await _operator(memo).client.credentials.kopf_login())

    @kopf.on.startup(registry=registry)
    async def startup(settings: kopf.OperatorSettings, memo: Any, **_: Any) -> None:
        configure(settings)
        await _operator(memo).start()

    @kopf.on.cleanup(registry=registry)
    async def cleanup(memo: Any, **_: Any) -> None:
        # Kopf runs this once its own tasks are stopped and then waits up to 5 s for every other task started
        # while it ran: the operator's tasks stop here, so that wait ends at once (and the Lease is released)
        await _operator(memo).stop()

    @kopf.on.probe(id="scheduler", registry=registry)
    async def probe(memo: Any, **_: Any) -> dict[str, Any]:
        return _operator(memo).health()

    @kopf.on.event("scheduling.x-k8s.io", "v1alpha1", "podgroups", registry=registry)
    async def podgroup_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_podgroup(event.get("type"), _raw(event))

    # Koordinator's PodGroups (crds/compat/): same semantics; when the CRD is not installed Kopf logs "Unresolved
    # resources cannot be served" once and serves the rest (scanning is disabled: a CRD installed later needs a restart)
    @kopf.on.event("scheduling.sigs.k8s.io", "v1alpha1", "podgroups", registry=registry)
    async def sigs_podgroup_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_podgroup(event.get("type"), _raw(event))

    # Volcano PodGroups, read only (their minMember counts Volcano-style gangs); optional like the one above
    @kopf.on.event("scheduling.volcano.sh", "v1beta1", "podgroups", registry=registry)
    async def volcano_podgroup_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_volcano_podgroup(event.get("type"), _raw(event))

    # Kubernetes 1.37's own PodGroups (scheduling.k8s.io/v1beta1, feature gate GenericWorkload): optional like these
    @kopf.on.event("scheduling.k8s.io", "v1beta1", "podgroups", registry=registry)
    async def native_podgroup_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_native_podgroup(event.get("type"), _raw(event))

    # Kubernetes 1.37's CompositePodGroups (scheduling.k8s.io/v1alpha3, feature gate CompositePodGroup): the gang trees
    @kopf.on.event("scheduling.k8s.io", "v1alpha3", "compositepodgroups", registry=registry)
    async def composite_podgroup_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_composite_podgroup(event.get("type"), _raw(event))

    # Grove's PodGangs (scheduler.grove.io/v1alpha1, crds/compat/): optional like the PodGroups above
    @kopf.on.event("scheduler.grove.io", "v1alpha1", "podgangs", registry=registry)
    async def podgang_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_podgang(event.get("type"), _raw(event))

    @kopf.on.event("", "v1", "nodes", registry=registry)
    async def node_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_node(event.get("type"), _raw(event))

    @kopf.on.event("", "v1", "namespaces", registry=registry)
    async def namespace_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_namespace(event.get("type"), _raw(event))

    @kopf.on.event("policy", "v1", "poddisruptionbudgets", registry=registry)
    async def pdb_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_pdb(event.get("type"), _raw(event))

    @kopf.on.event("", "v1", "persistentvolumeclaims", registry=registry)
    async def pvc_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_pvc(event.get("type"), _raw(event))

    @kopf.on.event("resource.k8s.io", "v1", "resourceslices", registry=registry)
    async def resource_slice_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_resource_slice(event.get("type"), _raw(event))

    @kopf.on.event("resource.k8s.io", "v1", "deviceclasses", registry=registry)
    async def device_class_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_device_class(event.get("type"), _raw(event))

    @kopf.on.event("resource.k8s.io", "v1", "resourceclaims", registry=registry)
    async def resource_claim_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_resource_claim(event.get("type"), _raw(event))

    @kopf.on.event("", "v1", "persistentvolumes", registry=registry)
    async def pv_event(event: kopf.RawEvent, memo: Any, **_: Any) -> None:
        _operator(memo).cache.on_pv(event.get("type"), _raw(event))

    return registry
