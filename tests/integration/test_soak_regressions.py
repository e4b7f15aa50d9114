"""End-to-end regressions of bugs the soak test (test_soak.py) found, each as small as the story that shows it."""

from __future__ import annotations

from typing import Any

from gangsched.sim.serve import running_cluster
from tests.integration.harness import create, eventually, get_podgroup, pod, podgroup, replica

NODE = {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4", "pods": "110"}


async def _status(k: Any, name: str) -> dict[str, Any]:
    status: dict[str, Any] = ((await get_podgroup(k, name)) or {}).get("status", {})
    return status


async def test_nonstrict_gang_whose_holding_members_are_deleted_is_no_longer_reported_scheduling() -> None:
    async with running_cluster(nodes=2, node_resources=NODE) as cluster:
        k = cluster.client
        async with replica(cluster.kubeconfig):
            # 3 members of 4 GPUs on 2 nodes of 4: two are placed and held, the third never fits
            await create(
                k,
                podgroup("hold", min_member=3, mode="NonStrict", scheduleTimeoutSeconds=600),
                *(pod(f"hold-{i}", group="hold", gpu=4) for i in range(3)),
            )

            async def holding() -> bool:
                return (await _status(k, "hold")).get("phase") == "Scheduling"

            await eventually(holding, what="the gang holding two reservations")
            for i in range(3):
                await k.delete(f"/api/v1/namespaces/default/pods/hold-{i}")

            async def pending() -> dict[str, Any] | None:
                status = await _status(k, "hold")
                # the message goes too (removed, not left stale): possibly one status write after the phase, when
                # the members' deletions arrive over several watch events
                return status if status.get("phase") == "Pending" and "message" not in status else None

            status = await eventually(pending, what="the PodGroup Pending, its holding message removed")
            assert (status["scheduled"], status["running"]) == (0, 0)
