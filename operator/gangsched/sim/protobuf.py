"""Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) into JSON-shaped dicts:
kubectl sends the objects of `kubectl create <kind>` as protobuf, the rest of the emulator sees one form.

Contract:
- `decode_object(body: bytes) -> dict` reads the 4-byte magic + `runtime.Unknown` envelope and the object's own
  message; returns {"apiVersion", "kind", ...fields}. Raises ProtobufError (400) for a bad envelope or wire
  format, UnsupportedKind (415) for a kind not in MESSAGES.
- Field numbers are data (MESSAGES), from the generated.proto files of Kubernetes 1.32, checked against the bytes
  kubectl sends. Empty values are left out as Go's JSON `omitempty` would (except KEEP_ZERO); unknown field
  numbers are skipped. Pure.
More: docs/modules.md#simprotobufpy.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from gangsched.models.timestamps import format_time

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """A body that is not a valid Kubernetes protobuf envelope/message."""


class UnsupportedKind(ProtobufError):
    """A well-formed envelope of a kind this emulator cannot decode from protobuf."""


# A field: (json name, type, label). type: "string", "bytes", "int32", "int64", "bool", "time", "intorstr",
# "quantity" or a message name; label: "" (singular), "repeated", or "map:<value type>" (map<string, value type>).
Field = tuple[str, str, str]

MESSAGES: dict[str, dict[int, Field]] = {
    # apimachinery runtime
    "Unknown": {
        1: ("typeMeta", "TypeMeta", ""),
        2: ("raw", "bytes", ""),
        3: ("contentEncoding", "string", ""),
        4: ("contentType", "string", ""),
    },
    "TypeMeta": {1: ("apiVersion", "string", ""), 2: ("kind", "string", "")},
    # meta/v1
    "ObjectMeta": {
        1: ("name", "string", ""),
        2: ("generateName", "string", ""),
        3: ("namespace", "string", ""),
        4: ("selfLink", "string", ""),
        5: ("uid", "string", ""),
        6: ("resourceVersion", "string", ""),
        7: ("generation", "int64", ""),
        8: ("creationTimestamp", "time", ""),
        9: ("deletionTimestamp", "time", ""),
        10: ("deletionGracePeriodSeconds", "int64", ""),
        11: ("labels", "string", "map:string"),
        12: ("annotations", "string", "map:string"),
        13: ("ownerReferences", "OwnerReference", "repeated"),
        14: ("finalizers", "string", "repeated"),
    },
    "OwnerReference": {
        1: ("kind", "string", ""),
        3: ("name", "string", ""),
        4: ("uid", "string", ""),
        5: ("apiVersion", "string", ""),
        6: ("controller", "bool", ""),
        7: ("blockOwnerDeletion", "bool", ""),
    },
    "LabelSelector": {
        1: ("matchLabels", "string", "map:string"),
        2: ("matchExpressions", "LabelSelectorRequirement", "repeated"),
    },
    "LabelSelectorRequirement": {
        1: ("key", "string", ""),
        2: ("operator", "string", ""),
        3: ("values", "string", "repeated"),
    },
    # core/v1
    "Namespace": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("spec", "NamespaceSpec", ""),
        3: ("status", "NamespaceStatus", ""),
    },
    "NamespaceSpec": {1: ("finalizers", "string", "repeated")},
    "NamespaceStatus": {1: ("phase", "string", "")},
    "ConfigMap": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("data", "string", "map:string"),
        3: ("binaryData", "bytes", "map:bytes"),
        4: ("immutable", "bool", ""),
    },
    "Secret": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("data", "bytes", "map:bytes"),
        3: ("type", "string", ""),
        4: ("stringData", "string", "map:string"),
        5: ("immutable", "bool", ""),
    },
    "ServiceAccount": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("secrets", "ObjectReference", "repeated"),
        3: ("imagePullSecrets", "LocalObjectReference", "repeated"),
        4: ("automountServiceAccountToken", "bool", ""),
    },
    "ObjectReference": {
        1: ("kind", "string", ""),
        2: ("namespace", "string", ""),
        3: ("name", "string", ""),
        4: ("uid", "string", ""),
        5: ("apiVersion", "string", ""),
        6: ("resourceVersion", "string", ""),
        7: ("fieldPath", "string", ""),
    },
    "LocalObjectReference": {1: ("name", "string", "")},
    "ResourceQuota": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("spec", "ResourceQuotaSpec", ""),
        3: ("status", "Empty", ""),
    },
    "ResourceQuotaSpec": {1: ("hard", "quantity", "map:quantity"), 2: ("scopes", "string", "repeated")},
    # the pod template, as far as `kubectl create deployment|job` fills it in (other field numbers are skipped)
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "PodSpec", "")},
    "PodSpec": {
        2: ("containers", "Container", "repeated"),
        3: ("restartPolicy", "string", ""),
        4: ("terminationGracePeriodSeconds", "int64", ""),
        5: ("activeDeadlineSeconds", "int64", ""),
        6: ("dnsPolicy", "string", ""),
        7: ("nodeSelector", "string", "map:string"),
        8: ("serviceAccountName", "string", ""),
        9: ("serviceAccount", "string", ""),
        10: ("nodeName", "string", ""),
        11: ("hostNetwork", "bool", ""),
        12: ("hostPID", "bool", ""),
        13: ("hostIPC", "bool", ""),
        16: ("hostname", "string", ""),
        17: ("subdomain", "string", ""),
        19: ("schedulerName", "string", ""),
        20: ("initContainers", "Container", "repeated"),
        22: ("tolerations", "Toleration", "repeated"),
        24: ("priorityClassName", "string", ""),
        25: ("priority", "int32", ""),
    },
    "Container": {
        1: ("name", "string", ""),
        2: ("image", "string", ""),
        3: ("command", "string", "repeated"),
        4: ("args", "string", "repeated"),
        5: ("workingDir", "string", ""),
        6: ("ports", "ContainerPort", "repeated"),
        7: ("env", "EnvVar", "repeated"),
        8: ("resources", "ResourceRequirements", ""),
        13: ("terminationMessagePath", "string", ""),
        14: ("imagePullPolicy", "string", ""),
        16: ("stdin", "bool", ""),
        17: ("stdinOnce", "bool", ""),
        18: ("tty", "bool", ""),
        20: ("terminationMessagePolicy", "string", ""),
    },
    "ContainerPort": {
        1: ("name", "string", ""),
        2: ("hostPort", "int32", ""),
        3: ("containerPort", "int32", ""),
        4: ("protocol", "string", ""),
        5: ("hostIP", "string", ""),
    },
    "EnvVar": {1: ("name", "string", ""), 2: ("value", "string", "")},
    "ResourceRequirements": {1: ("limits", "quantity", "map:quantity"), 2: ("requests", "quantity", "map:quantity")},
    "Toleration": {
        1: ("key", "string", ""),
        2: ("operator", "string", ""),
        3: ("value", "string", ""),
        4: ("effect", "string", ""),
        5: ("tolerationSeconds", "int64", ""),
    },
    # apps/v1 (staging/src/k8s.io/api/apps/v1/generated.proto)
    "Deployment": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "DeploymentSpec", ""), 3: ("status", "Empty", "")},
    "DeploymentSpec": {
        1: ("replicas", "int32", ""),
        2: ("selector", "LabelSelector", ""),
        3: ("template", "PodTemplateSpec", ""),
        4: ("strategy", "DeploymentStrategy", ""),
        5: ("minReadySeconds", "int32", ""),
        6: ("revisionHistoryLimit", "int32", ""),
        7: ("paused", "bool", ""),
        9: ("progressDeadlineSeconds", "int32", ""),
    },
    "DeploymentStrategy": {1: ("type", "string", ""), 2: ("rollingUpdate", "RollingUpdateDeployment", "")},
    "RollingUpdateDeployment": {1: ("maxUnavailable", "intorstr", ""), 2: ("maxSurge", "intorstr", "")},
    # batch/v1 (staging/src/k8s.io/api/batch/v1/generated.proto)
    "Job": {1: ("metadata", "ObjectMeta", ""), 2: ("spec", "JobSpec", ""), 3: ("status", "Empty", "")},
    "JobSpec": {
        1: ("parallelism", "int32", ""),
        2: ("completions", "int32", ""),
        3: ("activeDeadlineSeconds", "int64", ""),
        4: ("selector", "LabelSelector", ""),
        5: ("manualSelector", "bool", ""),
        6: ("template", "PodTemplateSpec", ""),
        7: ("backoffLimit", "int32", ""),
        8: ("ttlSecondsAfterFinished", "int32", ""),
        9: ("completionMode", "string", ""),
        10: ("suspend", "bool", ""),
    },
    # a status the server resets on create: decoded as {}
    "Empty": {},
    # scheduling/v1
    "PriorityClass": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("value", "int32", ""),
        3: ("globalDefault", "bool", ""),
        4: ("description", "string", ""),
        5: ("preemptionPolicy", "string", ""),
    },
    # policy/v1
    "PodDisruptionBudget": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("spec", "PodDisruptionBudgetSpec", ""),
        3: ("status", "PodDisruptionBudgetStatus", ""),
    },
    "PodDisruptionBudgetSpec": {
        1: ("minAvailable", "intorstr", ""),
        2: ("selector", "LabelSelector", ""),
        3: ("maxUnavailable", "intorstr", ""),
        4: ("unhealthyPodEvictionPolicy", "string", ""),
    },
    "PodDisruptionBudgetStatus": {
        1: ("observedGeneration", "int64", ""),
        3: ("disruptionsAllowed", "int32", ""),
        4: ("currentHealthy", "int32", ""),
        5: ("desiredHealthy", "int32", ""),
        6: ("expectedPods", "int32", ""),
    },
    # rbac/v1
    "Role": {1: ("metadata", "ObjectMeta", ""), 2: ("rules", "PolicyRule", "repeated")},
    "ClusterRole": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("rules", "PolicyRule", "repeated"),
        3: ("aggregationRule", "AggregationRule", ""),
    },
    "AggregationRule": {1: ("clusterRoleSelectors", "LabelSelector", "repeated")},
    "PolicyRule": {
        1: ("verbs", "string", "repeated"),
        2: ("apiGroups", "string", "repeated"),
        3: ("resources", "string", "repeated"),
        4: ("resourceNames", "string", "repeated"),
        5: ("nonResourceURLs", "string", "repeated"),
    },
    "RoleBinding": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("subjects", "Subject", "repeated"),
        3: ("roleRef", "RoleRef", ""),
    },
    "ClusterRoleBinding": {
        1: ("metadata", "ObjectMeta", ""),
        2: ("subjects", "Subject", "repeated"),
        3: ("roleRef", "RoleRef", ""),
    },
    "Subject": {
        1: ("kind", "string", ""),
        2: ("apiGroup", "string", ""),
        3: ("name", "string", ""),
        4: ("namespace", "string", ""),
    },
    "RoleRef": {1: ("apiGroup", "string", ""), 2: ("kind", "string", ""), 3: ("name", "string", "")},
}

# (apiVersion, kind) of the envelope -> top-level message
KINDS: dict[tuple[str, str], str] = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("apps/v1", "Deployment"): "Deployment",
    ("batch/v1", "Job"): "Job",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "ClusterRoleBinding",
}

# fields whose zero value is meaningful (no omitempty in their JSON tag)
KEEP_ZERO: frozenset[tuple[str, str]] = frozenset(
    {
        ("PriorityClass", "value"),
        ("PodDisruptionBudgetStatus", "disruptionsAllowed"),
        ("PodDisruptionBudgetStatus", "currentHealthy"),
        ("PodDisruptionBudgetStatus", "desiredHealthy"),
        ("PodDisruptionBudgetStatus", "expectedPods"),
    }
)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtobufError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


def wire_fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value): int for varint/fixed, bytes for length-delimited."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wtype = key >> 3, key & 7
        if number == 0:
            raise ProtobufError("field number 0")
        if wtype == 0:
            value, pos = _varint(buf, pos)
            yield number, wtype, value
        elif wtype == 2:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise ProtobufError("truncated length-delimited field")
            yield number, wtype, buf[pos : pos + length]
            pos += length
        elif wtype == 1:
            if pos + 8 > end:
                raise ProtobufError("truncated fixed64")
            yield number, wtype, int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wtype == 5:
            if pos + 4 > end:
                raise ProtobufError("truncated fixed32")
            yield number, wtype, int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wtype}")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _time(buf: bytes) -> str | None:
    seconds = nanos = 0
    for number, wtype, value in wire_fields(buf):
        if number == 1 and wtype == 0:
            seconds = _signed(value)
        elif number == 2 and wtype == 0:
            nanos = _signed(value)
    if seconds == 0 and nanos == 0:
        return None  # the zero Time, null in JSON
    return format_time(seconds)


def _int_or_string(buf: bytes) -> int | str:
    kind = int_val = 0
    str_val = ""
    for number, wtype, value in wire_fields(buf):
        if number == 1 and wtype == 0:
            kind = _signed(value)
        elif number == 2 and wtype == 0:
            int_val = _signed(value)
        elif number == 3 and wtype == 2:
            str_val = value.decode()
    return str_val if kind == 1 else int_val


def _scalar(ftype: str, wtype: int, value: Any, where: str) -> Any:
    if ftype == "string":
        if wtype != 2:
            raise ProtobufError(f"{where}: expected a string")
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise ProtobufError(f"{where}: invalid UTF-8") from None
    if ftype == "bytes":
        if wtype != 2:
            raise ProtobufError(f"{where}: expected bytes")
        return base64.b64encode(value).decode()
    if ftype in ("int32", "int64"):
        if wtype != 0:
            raise ProtobufError(f"{where}: expected a varint")
        return _signed(value)
    if ftype == "bool":
        if wtype != 0:
            raise ProtobufError(f"{where}: expected a varint")
        return bool(value)
    if wtype != 2:
        raise ProtobufError(f"{where}: expected a message")
    if ftype == "time":
        return _time(value)
    if ftype == "intorstr":
        return _int_or_string(value)
    if ftype == "quantity":  # resource.Quantity {string = 1}
        for number, item_wtype, item in wire_fields(value):
            if number == 1 and item_wtype == 2:
                return item.decode()
        return "0"
    return decode_message(ftype, value)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value is False or (value == 0 and not isinstance(value, bool)) or value == []


def decode_message(name: str, buf: bytes) -> dict[str, Any]:
    """One message of MESSAGES as its JSON-shaped dict (see module docstring for what is left out)."""
    fields = MESSAGES[name]
    out: dict[str, Any] = {}
    for number, wtype, value in wire_fields(buf):
        spec = fields.get(number)
        if spec is None:
            continue
        json_name, ftype, label = spec
        where = f"{name}.{json_name}"
        if label.startswith("map:"):
            if wtype != 2:
                raise ProtobufError(f"{where}: expected a map entry")
            key, item = "", None
            for n, w, v in wire_fields(value):
                if n == 1:
                    key = _scalar("string", w, v, where)
                elif n == 2:
                    item = _scalar(label[4:], w, v, where)
            out.setdefault(json_name, {})[key] = "" if item is None else item
        elif label == "repeated":
            out.setdefault(json_name, []).append(_scalar(ftype, wtype, value, where))
        else:
            decoded = _scalar(ftype, wtype, value, where)
            if _empty(decoded) and (name, json_name) not in KEEP_ZERO:
                out.pop(json_name, None)
            else:
                out[json_name] = decoded
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    """A protobuf request body (envelope + runtime.Unknown) as the JSON-shaped object (see module docstring)."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic number k8s\\x00")
    unknown = decode_message("Unknown", body[len(MAGIC) :])
    type_meta = unknown.get("typeMeta") or {}
    api_version, kind = str(type_meta.get("apiVersion", "")), str(type_meta.get("kind", ""))
    if unknown.get("contentEncoding"):
        raise ProtobufError(f"unsupported contentEncoding {unknown['contentEncoding']!r}")
    message = KINDS.get((api_version, kind))
    if message is None:
        supported = ", ".join(f"{k} ({v})" for v, k in KINDS)
        raise UnsupportedKind(
            f"{kind or '<no kind>'} in version {api_version!r} cannot be decoded from protobuf by this emulator; "
            f"send it as application/json (protobuf is decoded for: {supported})"
        )
    raw = base64.b64decode(unknown.get("raw", "")) if unknown.get("raw") else b""
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    obj.update(decode_message(message, raw))
    return obj
