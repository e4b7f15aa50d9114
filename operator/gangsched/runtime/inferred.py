"""The runtime side of gangs inferred from workloads (config `inferGangs`): opted-in namespaces and workload reads.

Contract:
- `InferenceSource(api, cache, config)` installs an InferredGangs (state/inferred.py) in the cache. `seed()` lists the
  namespaces labelled `<namespaceLabel>=true` (not with `allNamespaces`); when that list is refused (no
  manifests/rbac-infer-gangs.yaml: 403) one warning is logged, no namespace opts in and no watch is started
  (`watches_namespaces` False); otherwise `reflector` keeps the set current (label added or removed: the
  candidates of that namespace are declared again).
- `read_wanted(spawn)` (after each leader round) reads every workload the cache asks for, once (GET; no watch per
  kind, so a CRD that is not installed costs one 404, not a failing watch). The answer goes to the cache
  (`workload_read` then `reinfer`): a workload that cannot be read (403: one warning per kind; 404: gone or its CRD
  absent, one info line per kind) or makes no gang leaves its pods scheduled one by one, as without inference.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from gangsched.core import InvalidField
from gangsched.k8s.api import KubeApi
from gangsched.k8s.errors import ApiError
from gangsched.k8s.reflector import Reflector
from gangsched.models.config import InferGangsConfig
from gangsched.models.inferred import WorkloadInfo, WorkloadRef, workload_info
from gangsched.state.cache import ClusterCache
from gangsched.state.inferred import InferredGangs

log = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class InferenceSource:
    def __init__(self, *, api: KubeApi, cache: ClusterCache, config: InferGangsConfig) -> None:
        self.api = api
        self.cache = cache
        self.config = config
        cache.inferred = InferredGangs(all_namespaces=config.all_namespaces)
        self.watches_namespaces = not config.all_namespaces
        self.reflector: Reflector | None = None
        self._warned: set[tuple[str, int]] = set()  # (kind, status) already logged
        self.reads = 0  # workload GETs sent (tests: once per workload)

    async def seed(self) -> None:
        if not self.watches_namespaces:
            return
        label = self.config.namespace_label
        reflector = self.api.namespace_reflector(label, on_list=self._on_list, on_event=self._on_event)
        try:
            items = await self.api.list_labelled_namespaces(label)
        except ApiError as exc:
            self.watches_namespaces = False
            log.warning(
                "inferGangs: cannot list namespaces labelled %s=true (%s): gangs are inferred in no namespace;"
                " apply manifests/rbac-infer-gangs.yaml (or set inferGangs.allNamespaces) and restart",
                label,
                exc,
            )
            return
        self._on_list(items)
        self.reflector = reflector

    def _on_list(self, items: list[dict[str, Any]]) -> None:
        assert self.cache.inferred is not None
        names = {str((ns.get("metadata") or {}).get("name")) for ns in items}
        self.cache.reinfer(self.cache.inferred.namespace_set(names))

    def _on_event(self, kind: str, obj: dict[str, Any]) -> None:
        assert self.cache.inferred is not None
        name = str((obj.get("metadata") or {}).get("name"))
        self.cache.reinfer(self.cache.inferred.namespace_changed(name, kind != "DELETED"))

    def read_wanted(self, spawn: Spawn) -> None:
        inferred = self.cache.inferred
        if inferred is None:
            return
        for ref in inferred.take_wanted():
            spawn(self._read(ref))

    async def _read(self, ref: WorkloadRef) -> None:
        info: WorkloadInfo | None = None
        self.reads += 1
        try:
            obj = await self.api.get_object(ref.path)
            uid = str((obj.get("metadata") or {}).get("uid") or "")
            if not ref.uid or ref.uid == uid:  # (another object of that name: its pods' owner is gone)
                info = workload_info(ref, obj)
        except ApiError as exc:
            self._warn(ref, exc)
        except InvalidField as exc:
            log.warning(
                "inferGangs: %s %s/%s: %s; its pods are scheduled without a gang",
                ref.kind,
                ref.namespace,
                ref.name,
                exc,
            )
        inferred = self.cache.inferred
        if inferred is not None:
            self.cache.reinfer(inferred.workload_read(ref, info))

    def _warn(self, ref: WorkloadRef, exc: ApiError) -> None:
        if (ref.kind, exc.status) in self._warned:
            return
        self._warned.add((ref.kind, exc.status))
        what = f"inferGangs: cannot read {ref.kind} {ref.namespace}/{ref.name} ({exc})"
        if exc.status == 403:
            log.warning("%s: gangs of %s are not inferred; apply manifests/rbac-infer-gangs.yaml", what, ref.kind)
        else:
            log.info("%s: its pods are scheduled without a gang", what)
