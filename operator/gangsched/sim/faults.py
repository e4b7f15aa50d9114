"""Fault injection for the API emulator: the failures a client of a real kube-apiserver meets, on demand.

Contract:
- A `FaultRule` matches requests (`verb`, `resource`, `agent`), fires among them (`p`, `every`, `next`, `skip`,
  `limit`) and does `kind` (one of KINDS: http429/500/502/503/504, reset, latency, stall, watch-cut, watch-gone,
  continue-expired). Parsed from `'kind=http500,verb=create,p=0.2'` (`parse_rule_spec`) or JSON
  (`rule_from_mapping`); a bad rule raises FaultSpecError naming field, value and what is allowed.
- `FaultInjector(rules, seed=...)` decides deterministically per seed and request order; `active` is all the hot
  path reads. `await injector.intercept(info, serve, ...)` answers the fault or serves (`commit=true`: serve, then
  lose the answer); watch faults go to the watch loop as `WatchCut`.
- `record=True` logs every `pods/binding` request (`bindings`); `injected` counts injections by kind.
More: docs/modules.md#simfaultspy.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = (
    "http429",
    "http500",
    "http502",
    "http503",
    "http504",
    "reset",
    "latency",
    "stall",
    "watch-cut",
    "watch-gone",
    "continue-expired",
)
VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*")
COMMITTABLE = ("http500", "http504", "reset")
WATCH_ONLY = ("watch-cut", "watch-gone")

# the bodies, word for word where they come from Kubernetes (see tests/conformance/test_faults_*.py)
TOO_MANY_REQUESTS = "Too many requests, please try again later.\n"  # filters/maxinflight.go tooManyRequests
TIMEOUT_MESSAGE = "Timeout: request did not complete within the allotted timeout"  # filters/timeout.go
WATCH_EXPIRED = "The resourceVersion for the provided watch is too old."  # storage/etcd3/errors.go
INCONSISTENT_CONTINUE = (  # storage/etcd3/errors.go inconsistentContinue
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)
LB_502_HTML = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)
LB_503_HTML = (
    "<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
    "<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)


class FaultSpecError(ValueError):
    """A fault rule that cannot be used; the message names the field, the value and what is allowed."""


@dataclass
class FaultRule:
    kind: str
    verb: str = "*"  # alternatives separated by "|"
    resource: str = "*"  # "pods", "pods/binding", "pods/*" (any subresource of pods), "*" (anything)
    agent: str = "*"  # the User-Agent's product (before "/"), alternatives separated by "|"
    p: float | None = None
    every: int | None = None
    next: int | None = None
    skip: int = 0
    limit: int | None = None
    retry_after: int | None = None
    delay: float = 0.5
    seconds: float = 1.0
    events: int | None = None
    commit: bool = False
    matched: int = field(default=0, compare=False)
    injected: int = field(default=0, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "verb": self.verb, "resource": self.resource, "agent": self.agent}
        for key in ("p", "every", "next", "limit", "retry_after", "events"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.skip:
            out["skip"] = self.skip
        if self.kind in ("http504", "latency"):
            out["delay"] = self.delay
        if self.kind in ("stall", "watch-cut") and not (self.kind == "watch-cut" and self.events is not None):
            out["seconds"] = self.seconds
        if self.commit:
            out["commit"] = True
        out["matched"], out["injected"] = self.matched, self.injected
        return out


_INT_FIELDS = ("every", "next", "skip", "limit", "retry_after", "events")
_FLOAT_FIELDS = ("p", "delay", "seconds")
_STR_FIELDS = ("kind", "verb", "resource", "agent")
_FIELDS = (*_STR_FIELDS, *_INT_FIELDS, *_FLOAT_FIELDS, "commit")


def rule_from_mapping(spec: Mapping[str, Any]) -> FaultRule:
    """A FaultRule from a JSON-like mapping (keys of FaultRule; `retryAfter` is accepted for `retry_after`)."""
    if not isinstance(spec, Mapping):
        raise FaultSpecError(f"a fault rule must be an object, got {spec!r}")
    values: dict[str, Any] = {}
    for raw_key, value in spec.items():
        key = "retry_after" if raw_key == "retryAfter" else str(raw_key)
        if key in ("matched", "injected"):
            continue  # counters of a rule read back from GET /sim/faults
        if key not in _FIELDS:
            raise FaultSpecError(f"fault rule field {raw_key!r} is unknown: allowed fields are {', '.join(_FIELDS)}")
        try:
            if key in _INT_FIELDS:
                if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                    raise ValueError
                values[key] = int(value)
            elif key in _FLOAT_FIELDS:
                if isinstance(value, bool):
                    raise ValueError
                values[key] = float(value)
            elif key == "commit":
                if isinstance(value, str):
                    if value.lower() not in ("true", "false", "1", "0"):
                        raise ValueError
                    value = value.lower() in ("true", "1")
                values[key] = bool(value)
            else:
                values[key] = str(value)
        except (TypeError, ValueError):
            kind = "an integer" if key in _INT_FIELDS else "a number" if key in _FLOAT_FIELDS else "true or false"
            raise FaultSpecError(f"fault rule field {key!r}: {value!r} is not {kind}") from None
    if "kind" not in values:
        raise FaultSpecError(f"fault rule {dict(spec)!r} has no 'kind': allowed kinds are {', '.join(KINDS)}")
    rule = FaultRule(**values)
    validate(rule)
    return rule


def parse_rule_spec(text: str) -> FaultRule:
    """A FaultRule from the CLI form `key=value,key=value` (e.g. `kind=http429,verb=create,p=0.2`)."""
    spec: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise FaultSpecError(f"--fault {text!r}: {part!r} is not key=value (e.g. kind=http500,verb=create,p=0.2)")
        spec[key.strip()] = value.strip()
    return rule_from_mapping(spec)


def validate(rule: FaultRule) -> None:
    if rule.kind not in KINDS:
        raise FaultSpecError(
            f"fault rule field 'kind': {rule.kind!r} is not allowed: allowed kinds are {', '.join(KINDS)}"
        )
    for verb in rule.verb.split("|"):
        if verb not in VERBS:
            raise FaultSpecError(
                f"fault rule field 'verb': {verb!r} is not allowed: allowed verbs are {', '.join(VERBS)} ('|' "
                "between alternatives)"
            )
    if not rule.resource or not rule.agent:
        raise FaultSpecError("fault rule fields 'resource' and 'agent' must not be empty ('*' matches anything)")
    chosen = [k for k in ("p", "every", "next") if getattr(rule, k) is not None]
    if len(chosen) > 1:
        raise FaultSpecError(f"fault rule sets {' and '.join(chosen)}: give at most one of p, every, next")
    if rule.p is not None and not 0.0 <= rule.p <= 1.0:
        raise FaultSpecError(f"fault rule field 'p': {rule.p} is not allowed: a probability between 0 and 1")
    for key in ("every", "next", "limit", "events"):
        value = getattr(rule, key)
        if value is not None and value < 1:
            raise FaultSpecError(f"fault rule field {key!r}: {value} is not allowed: an integer >= 1")
    for key in ("skip", "retry_after"):
        value = getattr(rule, key)
        if value is not None and value < 0:
            raise FaultSpecError(f"fault rule field {key!r}: {value} is not allowed: an integer >= 0")
    for key in ("delay", "seconds"):
        if getattr(rule, key) < 0:
            raise FaultSpecError(f"fault rule field {key!r}: {getattr(rule, key)} is not allowed: seconds >= 0")
    if rule.commit and rule.kind not in COMMITTABLE:
        raise FaultSpecError(
            f"fault rule field 'commit' is allowed only with kinds {', '.join(COMMITTABLE)}, not {rule.kind!r}"
        )
    if rule.events is not None and rule.kind != "watch-cut":
        raise FaultSpecError(f"fault rule field 'events' is allowed only with kind 'watch-cut', not {rule.kind!r}")


@dataclass
class RequestInfo:
    """What a rule matches on (kube-apiserver's RequestInfo, reduced): verb, resource[/subresource], agent."""

    verb: str
    resource: str
    subresource: str | None
    agent: str
    namespace: str | None = None
    name: str | None = None
    resource_version: str = ""
    continue_token: str = ""
    cut: WatchCut | None = None  # set by intercept() for the watch loop
    binding_node: str = ""  # a pods/binding request's target node (set by the API server when recording)

    @property
    def full_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@dataclass
class WatchCut:
    """A watch stream to end abruptly after `events` events or `seconds` seconds, whichever comes first."""

    events: int | None
    seconds: float | None
    rule: FaultRule


@dataclass
class Answer:
    """A fault's answer instead of the real one: status, content type, body, headers; or a dropped connection."""

    status: int = 0
    content_type: str = "application/json"
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    reset: bool = False
    kind: str = ""


@dataclass
class BindingRecord:
    pod: str  # namespace/name
    node: str
    status: int
    lost_answer: str | None  # the fault kind that dropped the answer of a committed binding
    at: float


def _status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None
) -> bytes:
    import orjson

    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return orjson.dumps(body)


def watch_error_line(code: int, reason: str, message: str) -> bytes:
    return b'{"type":"ERROR","object":' + _status_body(code, reason, message) + b"}\n"


def _matches(pattern: str, value: str) -> bool:
    return pattern == "*" or value in pattern.split("|")


def _resource_matches(pattern: str, info: RequestInfo) -> bool:
    if pattern == "*":
        return True
    for alt in pattern.split("|"):
        if alt == info.full_resource:
            return True
        if alt.endswith("/*") and info.subresource and alt[:-2] == info.resource:
            return True
    return False


class FaultInjector:
    """See module docstring."""

    def __init__(self, rules: Iterable[FaultRule] = (), *, seed: int = 0, record: bool = False) -> None:
        self.seed = seed
        self.rules: list[FaultRule] = []
        self._rngs: list[random.Random] = []
        self.record = record
        self.injected: Counter[str] = Counter()
        self.bindings: list[BindingRecord] = []
        self.stall_until = 0.0  # time.monotonic()
        self.active = False
        self.add(rules)

    # ---------------------------------------------------------------- configuration
    def add(self, rules: Iterable[FaultRule]) -> None:
        for rule in rules:
            validate(rule)
            self._rngs.append(random.Random(f"{self.seed}/{len(self.rules)}"))
            self.rules.append(rule)
        self._refresh()

    def clear(self) -> None:
        """No more faults (counters and the binding log are kept); a stall under way ends now."""
        self.rules, self._rngs = [], []
        self.stall_until = 0.0
        self._refresh()

    def reseed(self, seed: int) -> None:
        self.seed = seed
        self._rngs = [random.Random(f"{seed}/{i}") for i in range(len(self.rules))]

    def set_record(self, record: bool) -> None:
        self.record = record
        self._refresh()

    def _refresh(self) -> None:
        self.active = bool(self.rules) or self.record or self.stall_until > time.monotonic()

    def state(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "record": self.record,
            "rules": [r.to_dict() for r in self.rules],
            "injected": dict(self.injected),
            "total": sum(self.injected.values()),
            "stalledFor": round(max(0.0, self.stall_until - time.monotonic()), 3),
        }

    # ---------------------------------------------------------------- decisions
    def _fires(self, index: int, rule: FaultRule, info: RequestInfo, *, decide: bool = True) -> bool:
        """Whether the rule fires for this request; a matching request is counted by the rule either way (so that
        `skip` / `every` / `next` count the requests the rule matches, whatever other rules do)."""
        if (
            not _matches(rule.verb, info.verb)
            or not _resource_matches(rule.resource, info)
            or not _matches(rule.agent, info.agent)
        ):
            return False
        if rule.kind in WATCH_ONLY and info.verb != "watch":
            return False
        if rule.kind == "watch-gone" and info.resource_version in ("", "0"):
            return False  # only a resumed watch can be too old
        if rule.kind == "continue-expired" and not info.continue_token:
            return False
        rule.matched += 1
        n = rule.matched - rule.skip
        if not decide or n <= 0 or (rule.limit is not None and rule.injected >= rule.limit):
            return False
        if rule.next is not None:
            fire = n <= rule.next
        elif rule.every is not None:
            fire = n % rule.every == 0
        elif rule.p is not None:
            fire = self._rngs[index].random() < rule.p
        else:
            fire = True
        if fire:
            rule.injected += 1
            self.injected[rule.kind] += 1
        return fire

    async def wait_stall(self) -> None:
        """Hold the caller while a global stall lasts (the fault itself: an apiserver that does not answer)."""
        while True:
            remaining = self.stall_until - time.monotonic()
            if remaining <= 0:
                return
            await asyncio.sleep(remaining)

    def stalled(self) -> bool:
        return self.stall_until > time.monotonic()

    async def intercept(
        self,
        info: RequestInfo,
        serve: Callable[[], Awaitable[Any]],
        *,
        inconsistent_token: Callable[[str], str] = lambda token: token,
    ) -> Answer | Any:
        """The fault's Answer, or whatever serve() returned (see module docstring)."""
        await self.wait_stall()
        delay = 0.0
        chosen: FaultRule | None = None
        for index, rule in enumerate(self.rules):
            if rule.kind in ("latency", "stall"):
                if self._fires(index, rule, info):
                    if rule.kind == "latency":
                        delay += rule.delay
                    else:
                        self.stall_until = max(self.stall_until, time.monotonic() + rule.seconds)
                        self.active = True
                continue
            if self._fires(index, rule, info, decide=chosen is None):
                chosen = rule
        if delay:
            await asyncio.sleep(delay)  # the injected latency
        await self.wait_stall()
        if chosen is None:
            return await self._serve(info, serve, None)
        kind = chosen.kind
        if kind == "watch-cut":
            info.cut = WatchCut(chosen.events, chosen.seconds if chosen.events is None else None, chosen)
            return await serve()
        if kind == "watch-gone":
            return Answer(200, body=watch_error_line(410, "Expired", WATCH_EXPIRED), kind=kind)
        if kind == "continue-expired":
            return Answer(
                410,
                body=_status_body(
                    410,
                    "Expired",
                    INCONSISTENT_CONTINUE,
                    metadata={"continue": inconsistent_token(info.continue_token)},
                ),
                kind=kind,
            )
        if chosen.commit and info.verb != "watch":
            await self._serve(info, serve, kind)
        if kind == "http429":
            retry = chosen.retry_after if chosen.retry_after is not None else 1
            return Answer(
                429,
                "text/plain; charset=utf-8",
                TOO_MANY_REQUESTS.encode(),
                {"Retry-After": str(retry), "X-Content-Type-Options": "nosniff"},
                kind=kind,
            )
        if kind == "http500":
            message = f"Internal error occurred: injected fault (rule {self.rules.index(chosen)})"
            return Answer(
                500,
                body=_status_body(500, "InternalError", message, {"causes": [{"message": "injected fault"}]}),
                kind=kind,
            )
        if kind == "http502":
            return Answer(502, "text/html", LB_502_HTML.encode(), {}, kind=kind)
        if kind == "http503":
            headers = {"Retry-After": str(chosen.retry_after)} if chosen.retry_after is not None else {}
            return Answer(503, "text/html", LB_503_HTML.encode(), headers, kind=kind)
        if kind == "http504":
            await asyncio.sleep(chosen.delay)  # the request hangs until the timeout filter answers
            return Answer(504, body=_status_body(504, "Timeout", TIMEOUT_MESSAGE, {}), kind=kind)
        return Answer(reset=True, kind=kind)

    async def _serve(self, info: RequestInfo, serve: Callable[[], Awaitable[Any]], lost: str | None) -> Any:
        response = await serve()
        if self.record and info.subresource == "binding" and info.verb == "create":
            self.bindings.append(
                BindingRecord(
                    f"{info.namespace}/{info.name}",
                    info.binding_node,
                    int(getattr(response, "status", 0)),
                    lost,
                    time.monotonic(),
                )
            )
        return response

    def bindings_state(self) -> dict[str, Any]:
        return {
            "items": [
                {"pod": b.pod, "node": b.node, "status": b.status, "lostAnswer": b.lost_answer} for b in self.bindings
            ]
        }


def load_rules(specs: Iterable[str] = (), path: str | None = None) -> tuple[list[FaultRule], int | None]:
    """The rules of `--fault SPEC` flags and of a `--faults FILE` (JSON or YAML: a list of rules, or an object
    `{"seed": N, "rules": [...]}`); returns (rules, the file's seed or None)."""
    rules: list[FaultRule] = []
    seed: int | None = None
    if path is not None:
        import yaml

        try:
            with open(path) as f:
                doc = yaml.safe_load(f)  # JSON is YAML
        except OSError as exc:
            raise FaultSpecError(f"--faults {path!r}: cannot be read: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise FaultSpecError(f"--faults {path!r}: not JSON or YAML: {exc}") from None
        if isinstance(doc, Mapping):
            if "seed" in doc:
                try:
                    seed = int(doc["seed"])
                except (TypeError, ValueError):
                    raise FaultSpecError(f"--faults {path!r}: 'seed' {doc['seed']!r} is not an integer") from None
            doc = doc.get("rules") or []
        if not isinstance(doc, list):
            raise FaultSpecError(
                f"--faults {path!r}: expected a list of rules or an object with 'rules', got {type(doc).__name__}"
            )
        rules += [rule_from_mapping(item) for item in doc]
    rules += [parse_rule_spec(spec) for spec in specs]
    return rules, seed
