"""Kubernetes `Status` answers of the emulator: the ApiError exception and the Status body builders.

Contract: handlers raise `ApiError(code, reason, message, ...)`; the HTTP layer turns it into a
`{"kind":"Status","apiVersion":"v1","status":"Failure",...}` body with the same HTTP code. The helper
constructors (`not_found`, `already_exists`, `conflict`, `invalid`, `bad_request`, ...) word messages the way
kube-apiserver does, so clients that match on reason and message behave as against a real cluster.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.types import ResourceType


class ApiError(Exception):
    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        name: str | None = None,
        rtype: ResourceType | None = None,
        causes: list[dict[str, str]] | None = None,
        retry_after: int | None = None,
        list_continue: str | None = None,
        details_kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.details_kind = details_kind  # details.kind when it is not the resource (422 Invalid names the Kind)
        self.list_continue = list_continue
        self.code = code
        self.reason = reason
        self.message = message
        self.name = name
        self.rtype = rtype
        self.causes = causes
        self.retry_after = retry_after

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {"continue": self.list_continue} if self.list_continue else {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        details: dict[str, Any] = {}
        if self.name is not None:
            details["name"] = self.name
        if self.rtype is not None:
            details["group"] = self.rtype.group
            details["kind"] = self.details_kind or self.rtype.plural
        if self.causes:
            details["causes"] = self.causes
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        if details:
            out["details"] = details
        return out


def _resource(rtype: ResourceType) -> str:
    return rtype.plural if not rtype.group else f"{rtype.plural}.{rtype.group}"


def success(*, code: int = 200, name: str | None = None, rtype: ResourceType | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}
    if name is not None and rtype is not None:
        out["details"] = {"name": name, "group": rtype.group, "kind": rtype.plural}
    return out


def not_found(rtype: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_resource(rtype)} "{name}" not found', name=name, rtype=rtype)


def already_exists(rtype: ResourceType, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{_resource(rtype)} "{name}" already exists', name=name, rtype=rtype)


def conflict(rtype: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(
        409, "Conflict", f'Operation cannot be fulfilled on {_resource(rtype)} "{name}": {why}', name=name, rtype=rtype
    )


def stale(rtype: ResourceType, name: str) -> ApiError:
    return conflict(
        rtype, name, "the object has been modified; please apply your changes to the latest version and try again"
    )


def invalid(rtype: ResourceType, name: str, causes: list[tuple[str, str]] | list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; causes are (field, detail) or (field, detail, cause reason) tuples."""
    full = [(c[0], c[1], c[2] if len(c) > 2 else "FieldValueInvalid") for c in causes]
    text = ", ".join(f"{f}: {m}" for f, m, _ in full)
    if len(full) > 1:
        text = "[" + text + "]"
    kind = rtype.kind if not rtype.group else f"{rtype.kind}.{rtype.group}"
    return ApiError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {text}',
        name=name,
        rtype=rtype,
        causes=[{"reason": r, "message": m, "field": f} for f, m, r in full],
        details_kind=rtype.kind,  # apimachinery errors.NewInvalid(qualifiedKind, ...): Details.Kind is the Kind
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(rtype: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(403, "Forbidden", f'{_resource(rtype)} "{name}" is forbidden: {why}', name=name, rtype=rtype)


def method_not_allowed(what: str) -> ApiError:
    return ApiError(
        405, "MethodNotAllowed", f"the server does not allow this method on the requested resource ({what})"
    )


def unsupported_media_type(content_type: str, allowed: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {', '.join(allowed)} "
        f"(got {content_type!r})",
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)
