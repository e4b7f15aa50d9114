"""`kubectl get` columns: meta.k8s.io/v1 Table output of the emulator (pure: objects and a clock in, a dict out).

Contract:
- `to_table(rtype, objects, *, now, wide=False, include_object="Metadata") -> dict`: columnDefinitions and one row
  per object, each with its PartialObjectMetadata, the whole object or none. Every column is sent (priority-1
  ones too); wide=True sets every priority to 0. The caller fills in the Table's metadata.
- Built-in kinds have kubectl's columns; custom resources NAME and the CRD's additionalPrinterColumns (JSONPaths
  evaluated, a missing value null, dates as ages); other kinds NAME AGE.
- `human_duration(seconds)` is apimachinery's HumanDuration (what AGE columns show).
More: docs/modules.md#simtablepy.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable
from typing import Any

from gangsched.sim.types import ResourceType

Column = dict[str, Any]
RowFn = Callable[[dict[str, Any], datetime.datetime], list[Any]]

_NAME_DESC = "Name must be unique within a namespace. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
_AGE_DESC = "CreationTimestamp is a timestamp representing the server time when this object was created."
_INCLUDE = ("Metadata", "Object", "None")


def _col(name: str, *, type_: str = "string", priority: int = 0, description: str = "", format_: str = "") -> Column:
    return {"name": name, "type": type_, "format": format_, "description": description, "priority": priority}


NAME_COLUMN = _col("Name", format_="name", description=_NAME_DESC)
AGE_COLUMN = _col("Age", description=_AGE_DESC)


def human_duration(seconds: float) -> str:
    """A duration as kubectl shows ages: 45s, 5m10s, 3h, 2d3h, 1y20d (apimachinery's HumanDuration)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        sec = whole % 60
        return f"{minutes}m" if sec == 0 else f"{minutes}m{sec}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        mins = minutes % 60
        return f"{hours}h" if mins == 0 else f"{hours}h{mins}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def parse_timestamp(text: Any) -> datetime.datetime | None:
    """An RFC 3339 timestamp as an aware datetime; None when absent or unparseable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.UTC)


def age(timestamp: Any, now: datetime.datetime) -> str:
    """The age of an RFC 3339 timestamp at `now`; "<unknown>" when there is none, "<invalid>" when unparseable."""
    if not timestamp:
        return "<unknown>"
    when = parse_timestamp(timestamp)
    if when is None:
        return "<invalid>"
    return human_duration((now - when).total_seconds())


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _created(obj: dict[str, Any], now: datetime.datetime) -> str:
    return age(_meta(obj).get("creationTimestamp"), now)


# ---------------------------------------------------------------- JSONPath (the subset printer columns use)

_SEGMENT = re.compile(r"""\.([^.\[\]]+)|\[(\d+)\]|\[\?\(@\.([\w.-]+)\s*==\s*["']([^"']*)["']\)\]|\[\*\]""")


def eval_jsonpath(obj: Any, path: str) -> list[Any]:
    """Values at a kubectl-style JSONPath (`.a.b`, `[0]`, `[*]`, `[?(@.k=="v")]`); [] when nothing is there."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.startswith("$"):
        text = text[1:]
    if text and not text.startswith((".", "[")):
        text = "." + text
    current = [obj]
    pos = 0
    while pos < len(text):
        match = _SEGMENT.match(text, pos)
        if not match:
            return []
        pos = match.end()
        field, index, key, wanted = match.groups()
        nxt: list[Any] = []
        for value in current:
            if field is not None and isinstance(value, dict) and field in value:
                nxt.append(value[field])
            elif index is not None and isinstance(value, list) and int(index) < len(value):
                nxt.append(value[int(index)])
            elif key is not None and isinstance(value, list):
                nxt.extend(v for v in value if isinstance(v, dict) and str(v.get(key)) == wanted)
            elif match.group(0) == "[*]" and isinstance(value, list):
                nxt.extend(value)
        current = nxt
    return [v for v in current if v is not None]


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"))


def _custom_cell(column: dict[str, Any], obj: dict[str, Any], now: datetime.datetime) -> Any:
    results = eval_jsonpath(obj, str(column.get("jsonPath", "")))
    if not results:
        return None
    if len(results) > 1:
        return ", ".join(_text(v) for v in results)
    value = results[0]
    kind = column.get("type", "string")
    if kind == "date":
        return age(value, now) if isinstance(value, str) else None
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return int(value)
    if kind == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    return _text(value)


def _crd_columns(rtype: ResourceType) -> tuple[list[Column], RowFn]:
    printer = list(rtype.printer_columns) or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    ]
    columns = [NAME_COLUMN] + [
        _col(
            str(c["name"]),
            type_=str(c.get("type", "string")),
            priority=int(c.get("priority", 0)),
            description=str(
                c.get("description", "")
                or ("Custom resource definition column (in JSONPath format): " + str(c.get("jsonPath", "")))
            ),
            format_=str(c.get("format", "")),
        )
        for c in printer
    ]

    def row(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
        return [_meta(obj).get("name", "")] + [_custom_cell(c, obj, now) for c in printer]

    return columns, row


# ---------------------------------------------------------------- built-in kinds


def _pod_status(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Pending"
    for cs in reversed(status.get("containerStatuses") or []):
        state = cs.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated:
            if terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated.get("signal"):
                reason = f"Signal:{terminated['signal']}"
            else:
                reason = f"ExitCode:{terminated.get('exitCode', 0)}"
    if _meta(pod).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return str(reason)


def _pod_row(pod: dict[str, Any], now: datetime.datetime) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or []) or len(statuses)
    ready = sum(1 for cs in statuses if cs.get("ready"))
    restarts = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    gates = spec.get("readinessGates") or []
    if gates:
        true_conditions = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
        gates_cell = f"{sum(1 for g in gates if g.get('conditionType') in true_conditions)}/{len(gates)}"
    else:
        gates_cell = "<none>"
    return [
        _meta(pod).get("name", ""),
        f"{ready}/{total}",
        _pod_status(pod),
        str(restarts),
        _created(pod, now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_cell,
    ]


_POD_COLUMNS = [
    NAME_COLUMN,
    _col("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", description="The aggregate status of the containers in this pod."),
    _col("Restarts", description="The number of times the containers in this pod have been restarted."),
    AGE_COLUMN,
    _col("IP", priority=1, description="IP address allocated to the pod."),
    _col("Node", priority=1, description="Name of the node the pod is assigned to."),
    _col("Nominated Node", priority=1, description="Name of the node the pod is nominated to (preemption)."),
    _col("Readiness Gates", priority=1, description="Pod readiness gates."),
]


def _node_row(node: dict[str, Any], now: datetime.datetime) -> list[Any]:
    meta, spec, status = _meta(node), node.get("spec") or {}, node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = meta.get("labels") or {}
    roles = sorted(
        {k.removeprefix("node-role.kubernetes.io/") for k in labels if k.startswith("node-role.kubernetes.io/")}
        | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set())
    )
    addresses = status.get("addresses") or []
    internal = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)
    external = next((a.get("address") for a in addresses if a.get("type") == "ExternalIP"), None)
    info = status.get("nodeInfo") or {}
    return [
        meta.get("name", ""),
        state,
        ",".join(r for r in roles if r) or "<none>",
        _created(node, now),
        info.get("kubeletVersion", ""),
        internal or "<none>",
        external or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE_COLUMNS = [
    NAME_COLUMN,
    _col("Status", description="The status of the node"),
    _col("Roles", description="The roles of the node"),
    AGE_COLUMN,
    _col("Version", description="Kubelet Version reported by the node."),
    _col("Internal-IP", priority=1, description="List of addresses reachable to the node."),
    _col("External-IP", priority=1, description="List of addresses reachable to the node."),
    _col("OS-Image", priority=1, description="OS Image reported by the node."),
    _col("Kernel-Version", priority=1, description="Kernel Version reported by the node."),
    _col("Container-Runtime", priority=1, description="Container Runtime Version reported by the node."),
]


def _event_row(event: dict[str, Any], now: datetime.datetime) -> list[Any]:
    regarding = event.get("involvedObject") or event.get("regarding") or {}
    series = event.get("series") or {}
    last = (
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("deprecatedLastTimestamp")
        or event.get("eventTime")
        or _meta(event).get("creationTimestamp")
    )
    kind = str(regarding.get("kind", "")).lower()
    return [
        age(last, now),
        event.get("type", ""),
        event.get("reason", ""),
        f"{kind}/{regarding.get('name', '')}" if kind else str(regarding.get("name", "")),
        str(event.get("message") or event.get("note") or "").strip(),
    ]


_EVENT_COLUMNS = [
    _col("Last Seen", description="Time when this Event was last observed."),
    _col("Type", description="Type of this event (Normal, Warning)."),
    _col("Reason", description="Why the action was taken."),
    _col("Object", description="The object that this event is about."),
    _col("Message", description="A human-readable description of the status of this operation."),
]


def _simple(
    *extra: tuple[Column, Callable[[dict[str, Any]], Any]], age_last: bool = True
) -> tuple[list[Column], RowFn]:
    columns = [NAME_COLUMN] + [c for c, _ in extra] + ([AGE_COLUMN] if age_last else [])

    def row(obj: dict[str, Any], now: datetime.datetime) -> list[Any]:
        cells = [_meta(obj).get("name", "")] + [fn(obj) for _, fn in extra]
        return cells + ([_created(obj, now)] if age_last else [])

    return columns, row


def _crd_created_at(obj: dict[str, Any]) -> Any:
    return _meta(obj).get("creationTimestamp")


def _builtin(rtype: ResourceType) -> tuple[list[Column], RowFn]:
    key = (rtype.group, rtype.plural)
    if key == ("", "pods"):
        return _POD_COLUMNS, _pod_row
    if key == ("", "nodes"):
        return _NODE_COLUMNS, _node_row
    if rtype.plural == "events":
        return _EVENT_COLUMNS, _event_row
    if key == ("", "namespaces"):
        return _simple(
            (
                _col("Status", description="The status of the namespace"),
                lambda o: (o.get("status") or {}).get("phase") or "Active",
            )
        )
    if key == ("", "configmaps"):
        return _simple(
            (
                _col("Data", type_="integer", description="Number of data entries"),
                lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            )
        )
    if key == ("coordination.k8s.io", "leases"):
        return _simple(
            (
                _col("Holder", description="The holder of the lease"),
                lambda o: (o.get("spec") or {}).get("holderIdentity") or "",
            )
        )
    if key == ("scheduling.k8s.io", "priorityclasses"):
        columns, row = _simple(
            (
                _col("Value", type_="integer", description="The value of the priority class"),
                lambda o: o.get("value", 0),
            ),
            (
                _col("Global-Default", type_="boolean", description="Whether this is the default priority class"),
                lambda o: bool(o.get("globalDefault")),
            ),
        )
        return [*columns, _col("PreemptionPolicy", description="The preemption policy")], lambda o, now: [
            *row(o, now),
            o.get("preemptionPolicy") or "PreemptLowerPriority",
        ]
    if key == ("policy", "poddisruptionbudgets"):
        return _simple(
            (
                _col("Min Available", description="The minimum number of pods that must be available"),
                lambda o: _str_or_na((o.get("spec") or {}).get("minAvailable")),
            ),
            (
                _col("Max Unavailable", description="The maximum number of pods that may be unavailable"),
                lambda o: _str_or_na((o.get("spec") or {}).get("maxUnavailable")),
            ),
            (
                _col(
                    "Allowed Disruptions",
                    type_="integer",
                    description="Calculated number of pods that may be disrupted",
                ),
                lambda o: int((o.get("status") or {}).get("disruptionsAllowed") or 0),
            ),
        )
    if key == ("apiextensions.k8s.io", "customresourcedefinitions"):
        return _simple((_col("Created At", type_="date", description=_AGE_DESC), _crd_created_at), age_last=False)
    if key == ("resource.k8s.io", "resourceclaims"):
        state = _col("State", description="A summary of the current state (allocated, pending, reserved, etc.).")
        return _simple((state, _claim_state))
    if key == ("resource.k8s.io", "resourceslices"):
        return _simple(
            (
                _col("Node", description="The node for which the slice was published"),
                lambda o: (o.get("spec") or {}).get("nodeName") or "<none>",
            ),
            (
                _col("Driver", description="The driver that published the slice"),
                lambda o: (o.get("spec") or {}).get("driver", ""),
            ),
            (
                _col("Pool", description="The pool of the slice"),
                lambda o: ((o.get("spec") or {}).get("pool") or {}).get("name", ""),
            ),
        )
    return _simple()


def _claim_state(claim: dict[str, Any]) -> str:
    """pkg/printers/internalversion/printers.go resourceClaimState: deleted, pending | allocated[,reserved]."""
    deleted = bool(_meta(claim).get("deletionTimestamp"))
    status = claim.get("status") or {}
    states = ["deleted"] if deleted else []
    if not status.get("allocation"):
        states += [] if deleted else ["pending"]
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
        elif deleted:
            states.append("deallocating")
    return ",".join(states)


def _str_or_na(value: Any) -> str:
    return "N/A" if value is None else str(value)


def columns_for(rtype: ResourceType) -> tuple[list[Column], RowFn]:
    """Column definitions and the row function of a type."""
    return _crd_columns(rtype) if rtype.is_crd else _builtin(rtype)


def _row_object(obj: dict[str, Any], include_object: str) -> dict[str, Any] | None:
    if include_object == "Object":
        return obj
    if include_object == "Metadata":
        return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _meta(obj)}
    return None


def to_table(
    rtype: ResourceType,
    objects: list[dict[str, Any]],
    *,
    now: datetime.datetime,
    wide: bool = False,
    include_object: str = "Metadata",
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of objects (see module docstring)."""
    if include_object not in _INCLUDE:
        raise ValueError(f'includeObject: invalid value "{include_object}": must be one of {", ".join(_INCLUDE)}')
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.UTC)
    columns, row_fn = columns_for(rtype)
    definitions = [dict(c, priority=0) if wide else dict(c) for c in columns]
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": row_fn(obj, now)}
        shown = _row_object(obj, include_object)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": definitions,
        "rows": rows,
    }
