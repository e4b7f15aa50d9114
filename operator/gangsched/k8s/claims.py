"""Writing DRA ResourceClaims before a binding: status.allocation and status.reservedFor, and undoing them.

Contract (oracle: kubernetes pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go PreBind ->
bindClaim, and Unreserve): `await writer.reserve(claim_key, allocation_json | None, consumer) -> str | None` reads
the claim and PUTs .../status with its resourceVersion (a 409 or a transient error: read again and reconciled, up
to ATTEMPTS): the consumer added to reservedFor once, the allocation written when the claim has none. None when
done; else why not (gone, being deleted, allocated meanwhile to other devices, 256 consumers, an API error).
`await writer.release(claim_key, consumer, *, ours)`: the consumer taken out of reservedFor; with `ours` (we wrote
the allocation) and nobody left, the allocation cleared. Never raises (a failure is logged).
"""

from __future__ import annotations

import logging
from typing import Any

from gangsched.k8s.client import ApiError, KubeClient, resource_path

ATTEMPTS = 5
MAX_CONSUMERS = 256
log = logging.getLogger(__name__)


def _path(claim_key: str, *, status: bool) -> str:
    namespace, _, name = claim_key.partition("/")
    return resource_path(
        group="resource.k8s.io",
        version="v1",
        plural="resourceclaims",
        namespace=namespace,
        name=name,
        subresource="status" if status else None,
    )


def _devices(allocation: Any) -> list[tuple[Any, ...]]:
    """The devices an allocation names (the API may add fields, e.g. defaults, to what was written)."""
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return sorted((r.get("request"), r.get("driver"), r.get("pool"), r.get("device")) for r in results)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("uid") == b.get("uid") and a.get("name") == b.get("name") and a.get("resource") == b.get("resource")


class ClaimWriter:
    def __init__(self, client: KubeClient) -> None:
        self._client = client

    async def reserve(self, claim_key: str, allocation: dict[str, Any] | None, consumer: dict[str, Any]) -> str | None:
        last = ""
        for _ in range(ATTEMPTS):
            try:
                claim = await self._client.get(_path(claim_key, status=False))
            except ApiError as exc:
                return f"ResourceClaim {claim_key}: {'not found' if exc.status == 404 else exc}"
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return f"ResourceClaim {claim_key} is being deleted"
            status = dict(claim.get("status") or {})
            reserved = list(status.get("reservedFor") or [])
            current = status.get("allocation")
            if current is not None and allocation is not None and _devices(current) != _devices(allocation):
                return f"ResourceClaim {claim_key} was allocated meanwhile by someone else"
            if current is None:
                if allocation is None:
                    return f"ResourceClaim {claim_key} is no longer allocated"
                status["allocation"] = allocation
            if any(_same(r, consumer) for r in reserved):
                if current is not None:
                    return None  # (a retry after a lost answer)
            elif len(reserved) >= MAX_CONSUMERS:
                return f"ResourceClaim {claim_key} is reserved for {MAX_CONSUMERS} consumers"
            else:
                reserved.append(consumer)
            status["reservedFor"] = reserved
            claim["status"] = status
            try:
                await self._client.replace(_path(claim_key, status=True), claim)
                return None
            except ApiError as exc:
                last = str(exc)
                if exc.status != 409 and not exc.transient:
                    return f"ResourceClaim {claim_key}: {exc}"
        return f"ResourceClaim {claim_key}: {last} (after {ATTEMPTS} attempts)"

    async def release(self, claim_key: str, consumer: dict[str, Any], *, ours: bool) -> None:
        for _ in range(ATTEMPTS):
            try:
                claim = await self._client.get(_path(claim_key, status=False))
                status = dict(claim.get("status") or {})
                reserved = [r for r in status.get("reservedFor") or [] if not _same(r, consumer)]
                if len(reserved) == len(status.get("reservedFor") or []) and not (ours and not reserved):
                    return
                status["reservedFor"] = reserved
                if ours and not reserved:
                    status.pop("allocation", None)
                    status.pop("reservedFor", None)
                claim["status"] = status
                await self._client.replace(_path(claim_key, status=True), claim)
                return
            except ApiError as exc:
                if exc.status == 404:
                    return
                if exc.status != 409 and not exc.transient:
                    log.warning("ResourceClaim %s: undoing its reservation failed: %s", claim_key, exc)
                    return
        log.warning("ResourceClaim %s: undoing its reservation failed after %d attempts", claim_key, ATTEMPTS)
