"""Semantic validation of built-in kinds that the operator could violate (pure; the REST layer answers 422).

Contract: `validate(group, kind, obj, *, namespace) -> list[(field path, detail, reason)]` (empty when valid), with
the details a real apiserver prints, for:
- Events (core/v1 and events.k8s.io/v1, as ValidateEventCreate and legacyValidateEvent): the namespace rules of
  legacy events, the reporting fields and length limits of new ones, the stricter events.k8s.io/v1 create (an
  events.k8s.io/v1 object mapped to the core fields it is stored as);
- Leases (ValidateLeaseSpec): leaseDurationSeconds > 0, leaseTransitions >= 0, strategy, preferredHolder.
More: docs/modules.md#simvalidationrulespy.
"""

from __future__ import annotations

import re
from typing import Any

Problem = tuple[str, str, str]

REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def quote(value: Any) -> str:
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def invalid(path: str, value: Any, detail: str) -> Problem:
    return (path, f"Invalid value: {quote(value)}: {detail}", "FieldValueInvalid")


def required(path: str) -> Problem:
    return (path, "Required value", "FieldValueRequired")


def qualified_name_errors(value: str) -> list[str]:
    """validation.IsQualifiedName (staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go)."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return [
                (
                    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                    "'-' or '.', and must start and end with an alphanumeric character"
                )
            ]
    else:
        return [
            (
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
                "and '/' (e.g. 'example.com/MyName')"
            )
        ]
    if not name:
        return ["name part must be non-empty"]
    errors = []
    if len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.match(name):
        errors.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return errors


def core_event_view(obj: dict[str, Any], *, new_api: bool) -> dict[str, Any]:
    """The core Event fields of an Event object (events.k8s.io/v1 fields mapped to their core names)."""
    if not new_api:
        return obj
    return {
        "metadata": obj.get("metadata") or {},
        "involvedObject": obj.get("regarding") or {},
        "message": obj.get("note") or "",
        "reason": obj.get("reason") or "",
        "type": obj.get("type") or "",
        "eventTime": obj.get("eventTime"),
        "series": obj.get("series"),
        "action": obj.get("action") or "",
        "reportingComponent": obj.get("reportingController") or "",
        "reportingInstance": obj.get("reportingInstance") or "",
        "source": obj.get("deprecatedSource") or {},
        "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
        "lastTimestamp": obj.get("deprecatedLastTimestamp"),
        "count": obj.get("deprecatedCount") or 0,
    }


def validate_event(obj: dict[str, Any], *, namespace: str, new_api: bool) -> list[Problem]:  # noqa: C901 (predates the complexity ceiling)
    """ValidateEventCreate for an Event created through core/v1 (new_api=False) or events.k8s.io/v1."""
    ev = core_event_view(obj, new_api=new_api)
    problems: list[Problem] = []
    involved = ev.get("involvedObject") or {}
    involved_ns = str(involved.get("namespace") or "") if isinstance(involved, dict) else ""
    controller_field = "reportingController" if new_api else "reportingComponent"
    if not ev.get("eventTime"):
        if not involved_ns:
            if namespace not in ("", "default"):
                problems.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        elif namespace != involved_ns:
            problems.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and namespace not in ("default", "kube-system"):
            problems.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        controller = str(ev.get("reportingComponent") or "")
        if not controller:
            problems.append(required(controller_field))
        for msg in qualified_name_errors(controller):
            problems.append(invalid(controller_field, controller, msg))
        instance = str(ev.get("reportingInstance") or "")
        if not instance:
            problems.append(required("reportingInstance"))
        if len(instance) > REPORTING_INSTANCE_LIMIT:
            problems.append(invalid("reportingInstance", "", f"can have at most {REPORTING_INSTANCE_LIMIT} characters"))
        action = str(ev.get("action") or "")
        if not action:
            problems.append(required("action"))
        if len(action) > ACTION_LIMIT:
            problems.append(invalid("action", "", f"can have at most {ACTION_LIMIT} characters"))
        reason = str(ev.get("reason") or "")
        if not reason:
            problems.append(required("reason"))
        if len(reason) > REASON_LIMIT:
            problems.append(invalid("reason", "", f"can have at most {REASON_LIMIT} characters"))
        message_field = "note" if new_api else "message"
        if len(str(ev.get("message") or "")) > NOTE_LIMIT:
            problems.append(invalid(message_field, "", f"can have at most {NOTE_LIMIT} characters"))
    if namespace and (len(namespace) > 253 or not _DNS1123_SUBDOMAIN.match(namespace)):
        problems.append(
            invalid(
                "namespace",
                namespace,
                "a lowercase RFC 1123 subdomain must consist of lower case "
                "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                "character",
            )
        )
    if not new_api:
        return problems
    series = ev.get("series")
    if isinstance(series, dict):
        count = series.get("count")
        if not isinstance(count, int) or count < 2:
            problems.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            problems.append(required("series.lastObservedTime"))
    if not ev.get("eventTime"):
        problems.append(required("eventTime"))
    if ev.get("type") not in ("Normal", "Warning"):
        problems.append(invalid("type", "", f"has invalid value: {ev.get('type') or ''}"))
    if ev.get("firstTimestamp"):
        problems.append(invalid("firstTimestamp", "", "needs to be unset"))
    if ev.get("lastTimestamp"):
        problems.append(invalid("lastTimestamp", "", "needs to be unset"))
    if ev.get("count"):
        problems.append(invalid("count", "", "needs to be unset"))
    source = ev.get("source") or {}
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        problems.append(invalid("source", "", "needs to be unset"))
    return problems


def validate_lease(obj: dict[str, Any]) -> list[Problem]:
    """ValidateLeaseSpec."""
    spec = obj.get("spec") or {}
    problems: list[Problem] = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:  # other types are decode errors (decode.py)
        problems.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        problems.append(invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None:
        # ValidateCoordinatedLeaseStrategy is called with spec.strategy and adds .strategy again (as upstream)
        if "/" not in str(strategy):
            if strategy != "OldestEmulationVersion":
                problems.append(
                    (
                        "spec.strategy.strategy",
                        f'Unsupported value: {quote(strategy)}: supported values: "OldestEmulationVersion"',
                        "FieldValueNotSupported",
                    )
                )
        else:
            for msg in qualified_name_errors(str(strategy)):
                problems.append(invalid("spec.strategy.strategy", strategy, msg))
    if spec.get("preferredHolder") and not spec.get("strategy"):
        problems.append(
            ("spec.preferredHolder", "Forbidden: may only be specified if `strategy` is defined", "FieldValueForbidden")
        )
    return problems


def validate(group: str, kind: str, obj: dict[str, Any], *, namespace: str, create: bool) -> list[Problem]:
    """See module docstring. Event rules apply on create (updates keep the legacy checks)."""
    if kind == "Event" and group in ("", "events.k8s.io"):
        return validate_event(obj, namespace=namespace, new_api=group == "events.k8s.io" and create)
    if kind == "Lease" and group == "coordination.k8s.io":
        return validate_lease(obj)
    return []
