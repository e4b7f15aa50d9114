"""Just enough of the protobuf wire format to read the two request bodies kubectl sends as protobuf to the auth
endpoints: SelfSubjectAccessReview (`kubectl auth can-i`) and TokenRequest (`kubectl create token`).

Contract: `unwrap(body) -> bytes` strips the Kubernetes protobuf envelope (magic "k8s\\0" then runtime.Unknown:
typeMeta=1, raw=2; apimachinery/pkg/runtime/serializer/protobuf) and returns the object's bytes; `fields(data)`
parses one message into {field number: [values]} (varints as int, length-delimited as bytes);
`self_subject_access_review_spec(raw)`, `self_subject_rules_review_spec(raw)` and `token_request_spec(raw)` turn the
objects into the JSON-shaped spec dicts (field numbers of k8s.io/api/authorization/v1 and authentication/v1
generated.proto). Bad input raises ValueError.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim.protobuf import MAGIC, wire_fields


def fields(data: bytes) -> dict[int, list[Any]]:
    """One message's fields, {number: [values]}, read by protobuf.py's wire decoder."""
    out: dict[int, list[Any]] = {}
    for number, _wtype, value in wire_fields(data):
        out.setdefault(number, []).append(value)
    return out


def unwrap(body: bytes) -> bytes:
    if not body.startswith(MAGIC):
        raise ValueError("not a Kubernetes protobuf body (no k8s\\0 prefix)")
    raw = fields(body[len(MAGIC) :]).get(2)
    return bytes(raw[0]) if raw else b""


def _text(f: dict[int, list[Any]], number: int) -> str:
    values = f.get(number)
    return bytes(values[-1]).decode() if values else ""


def self_subject_access_review_spec(raw: bytes) -> dict[str, Any]:
    spec_bytes = fields(raw).get(2)
    spec = fields(bytes(spec_bytes[0])) if spec_bytes else {}
    out: dict[str, Any] = {}
    if 1 in spec:
        r = fields(bytes(spec[1][0]))
        keys = ("namespace", "verb", "group", "version", "resource", "subresource", "name")
        out["resourceAttributes"] = {k: _text(r, n) for n, k in enumerate(keys, start=1) if _text(r, n)}
    if 2 in spec:
        n = fields(bytes(spec[2][0]))
        out["nonResourceAttributes"] = {k: v for k, v in (("path", _text(n, 1)), ("verb", _text(n, 2))) if v}
    return out


def token_request_spec(raw: bytes) -> dict[str, Any]:
    spec_bytes = fields(raw).get(2)
    spec = fields(bytes(spec_bytes[0])) if spec_bytes else {}
    out: dict[str, Any] = {}
    if spec.get(1):
        out["audiences"] = [bytes(a).decode() for a in spec[1]]
    if spec.get(4):
        out["expirationSeconds"] = int(spec[4][-1])
    return out


def self_subject_rules_review_spec(raw: bytes) -> dict[str, Any]:
    spec_bytes = fields(raw).get(2)
    spec = fields(bytes(spec_bytes[0])) if spec_bytes else {}
    return {"namespace": _text(spec, 1)} if _text(spec, 1) else {}
