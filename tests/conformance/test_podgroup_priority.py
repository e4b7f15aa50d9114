"""The Priority admission plugin on PodGroups (Kubernetes 1.37, WorkloadAwarePreemption), over HTTP.

Sources (kubernetes/kubernetes): plugin/pkg/admission/priority/admission_test.go TestAdmitPodGroup (the case names
below are its names) and admission.go (getDefaultPriority, the pod path's messages); k8s.io/api
scheduling/v1beta1/types.go PodGroupSpec.priority ("When Priority Admission Controller is enabled, it prevents users
from setting this field. The admission controller populates this field from PriorityClassName") and
preemptionPolicy ("populates this field from PriorityClassName, and defaults to PreemptLowerPriority if value is
unset in PriorityClass"). The gate is off in every profile of the emulator (sim/features.py OPT_IN).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gangsched.sim.apiserver import ApiServer
from gangsched.sim.features import resolve
from tests.conformance.test_scheduling_podgroup import PGS, call, podgroup

PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def priority_class(name: str, value: int, *, default: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "globalDefault": default,
        **extra,
    }


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    api = ApiServer(gates=resolve("full", "WorkloadAwarePreemption=true"))
    await api.start(host="127.0.0.1", port=0)
    try:
        yield api
    finally:
        await api.stop()


async def classes(server: ApiServer, *pcs: dict[str, Any]) -> None:
    for pc in pcs:
        status, body = await call(server, "POST", PCS, pc)
        assert status == 201, body


async def test_empty_priority_class_name_is_set_to_the_global_default(server: ApiServer) -> None:
    await classes(server, priority_class("default1", 1000, default=True), priority_class("nondefault1", 2000))
    status, pg = await call(server, "POST", PGS, podgroup("g"))
    assert status == 201, pg
    assert (pg["spec"]["priorityClassName"], pg["spec"]["priority"]) == ("default1", 1000)
    assert pg["spec"]["preemptionPolicy"] == "PreemptLowerPriority"  # unset in the class


async def test_explicit_priority_class_name_is_resolved(server: ApiServer) -> None:
    await classes(server, priority_class("default1", 1000, default=True))
    await classes(server, priority_class("nondefault1", 2000, preemptionPolicy="Never"))
    status, pg = await call(server, "POST", PGS, podgroup("g", priorityClassName="nondefault1"))
    assert status == 201, pg
    assert (pg["spec"]["priority"], pg["spec"]["preemptionPolicy"]) == (2000, "Never")


async def test_non_existent_priority_class_name_is_rejected(server: ApiServer) -> None:
    status, body = await call(server, "POST", PGS, podgroup("g", priorityClassName="non-existent"))
    assert status == 403 and "no PriorityClass with name non-existent was found" in body["message"], body


async def test_no_global_default_gives_priority_zero(server: ApiServer) -> None:
    await classes(server, priority_class("nondefault1", 2000))
    status, pg = await call(server, "POST", PGS, podgroup("g"))
    assert status == 201, pg
    assert pg["spec"]["priority"] == 0 and not pg["spec"].get("priorityClassName")


async def test_pre_set_priority_matching_is_accepted_and_differing_is_rejected(server: ApiServer) -> None:
    await classes(server, priority_class("nondefault1", 2000))
    status, pg = await call(server, "POST", PGS, podgroup("ok", priorityClassName="nondefault1", priority=2000))
    assert status == 201, pg
    status, body = await call(server, "POST", PGS, podgroup("bad", priorityClassName="nondefault1", priority=9999))
    assert status == 403 and "priority admission controller computed 2000" in body["message"], body


async def test_without_the_gate_nothing_is_resolved(apiserver: ApiServer) -> None:
    """The default profile (WorkloadAwarePreemption off): a PodGroup's priority is what it says."""
    status, pg = await call(apiserver, "POST", PGS, podgroup("g", priorityClassName="non-existent", priority=7))
    assert status == 201, pg
    assert pg["spec"]["priority"] == 7 and "preemptionPolicy" not in pg["spec"]
