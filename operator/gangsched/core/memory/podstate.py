"""The lifecycle of one pod in the scheduler's memory: a state machine with named, checked transitions.

Contract:
- `PodState`: PENDING, NOMINATED (capacity held while victims terminate), RESERVED (placed in memory), BINDING
  (a pods/binding call in flight), ASSUMED (bound by us, not yet seen bound), BOUND, LEAVING (bound, being
  deleted), TERMINAL (Succeeded/Failed).
- `advance(state, transition)` returns the new state or raises `IllegalTransition` (naming the state, the
  transition and the legal ones); decisions and the binder's answers are strict, observations of the API
  (`OBSERVE_*`) are legal from every state.
- `charges(state)`: RESERVED, BINDING, ASSUMED, BOUND and LEAVING charge their node (the store derives used
  resources from this only); `pending(state)`: PENDING or NOMINATED. More: docs/modules.md#corememorypodstatepy.
"""

from __future__ import annotations

from enum import Enum
from typing import Final

from gangsched.core.values.errors import CoreError


class PodState(Enum):
    __hash__ = object.__hash__  # members are singletons: identity hashing, in C (Enum's own is Python code)

    PENDING = "pending"
    NOMINATED = "nominated"
    RESERVED = "reserved"
    BINDING = "binding"
    ASSUMED = "assumed"
    BOUND = "bound"
    LEAVING = "leaving"
    TERMINAL = "terminal"


class Transition(Enum):
    __hash__ = object.__hash__

    NOMINATE = "nominate"  # a preemptor member gets (or changes) its nominated node
    CLEAR_NOMINATION = "clear-nomination"  # the nomination is given up
    RESERVE = "reserve"  # placed in memory, not bound yet
    RELEASE = "release"  # a reservation given up (Strict failure, timeout)
    BIND = "bind"  # a pods/binding call is started
    BIND_SUCCEEDED = "bind-succeeded"  # the binder's call succeeded: assumed bound until the watch shows it
    BIND_FAILED = "bind-failed"  # the binder's call failed: pending again
    NODE_GONE = "node-gone"  # the node was removed (the store uses it for bindings; reservations: recheck.py)
    MARK_LEAVING = "mark-leaving"  # a bound pod's deletionTimestamp is seen
    OBSERVE_UNBOUND = "observe-unbound"  # the API shows the pod without a node and not finished
    OBSERVE_BOUND = "observe-bound"  # the API shows spec.nodeName (for an assumed pod: the confirmation)
    OBSERVE_LEAVING = "observe-leaving"  # the API shows it bound with a deletionTimestamp
    OBSERVE_TERMINAL = "observe-terminal"  # the API shows it Succeeded or Failed


class IllegalTransition(CoreError):
    """A transition that is not legal from the pod's current state (a bug in the caller, never bad input)."""

    def __init__(self, state: PodState, transition: Transition, pod_key: str | None = None) -> None:
        self.state = state
        self.transition = transition
        legal = sorted(t.value for t in legal_from(state))
        who = f"pod {pod_key}: " if pod_key is not None else ""
        super().__init__(
            f"{who}illegal transition {transition.value!r} from state {state.value!r}; legal from there: {legal}"
        )


S = PodState
T = Transition

# Module-level aliases for hot paths: attribute access on an Enum class is slow in Python 3.11.
PENDING, NOMINATED, RESERVED, BINDING = S.PENDING, S.NOMINATED, S.RESERVED, S.BINDING
ASSUMED, BOUND, LEAVING, TERMINAL = S.ASSUMED, S.BOUND, S.LEAVING, S.TERMINAL

# Decisions and binder answers: (state, transition) -> new state; every pair not listed is illegal.
_DECISIONS: Final[dict[tuple[PodState, Transition], PodState]] = {
    (S.PENDING, T.NOMINATE): S.NOMINATED,
    (S.NOMINATED, T.NOMINATE): S.NOMINATED,
    (S.NOMINATED, T.CLEAR_NOMINATION): S.PENDING,
    (S.PENDING, T.RESERVE): S.RESERVED,
    (S.NOMINATED, T.RESERVE): S.RESERVED,
    (S.RESERVED, T.RESERVE): S.RESERVED,  # the reservation moves (or is renewed)
    (S.RESERVED, T.RELEASE): S.PENDING,
    (S.PENDING, T.BIND): S.BINDING,
    (S.NOMINATED, T.BIND): S.BINDING,
    (S.RESERVED, T.BIND): S.BINDING,
    (S.BINDING, T.BIND_SUCCEEDED): S.ASSUMED,
    (S.BINDING, T.BIND_FAILED): S.PENDING,
    (S.RESERVED, T.NODE_GONE): S.PENDING,
    (S.BINDING, T.NODE_GONE): S.PENDING,
    (S.BOUND, T.MARK_LEAVING): S.LEAVING,
}

# Observations of the API: legal from every state (the API is the truth). An unbound, unfinished pod keeps an
# in-memory state that has no node yet (pending, nominated, reserved, binding); a pod the API no longer shows
# bound (re-created under the same name, or another pod of that name after our binding) is pending again.
_OBSERVED_TARGET: Final[dict[Transition, PodState]] = {
    T.OBSERVE_BOUND: S.BOUND,
    T.OBSERVE_LEAVING: S.LEAVING,
    T.OBSERVE_TERMINAL: S.TERMINAL,
}
_KEEP_WHEN_UNBOUND: Final = frozenset({S.PENDING, S.NOMINATED, S.RESERVED, S.BINDING})

TABLE: Final[dict[tuple[PodState, Transition], PodState]] = dict(_DECISIONS)
for _state in PodState:
    for _observation, _target in _OBSERVED_TARGET.items():
        TABLE[(_state, _observation)] = _target
    TABLE[(_state, T.OBSERVE_UNBOUND)] = _state if _state in _KEEP_WHEN_UNBOUND else S.PENDING

CHARGING: Final = frozenset({S.RESERVED, S.BINDING, S.ASSUMED, S.BOUND, S.LEAVING})
PENDING_STATES: Final = frozenset({S.PENDING, S.NOMINATED})
PLACED_IN_MEMORY: Final = frozenset({S.RESERVED, S.BINDING})  # placed by us, no nodeName in the API yet


def advance(state: PodState, transition: Transition, pod_key: str | None = None) -> PodState:
    """The state after `transition`, or IllegalTransition."""
    target = TABLE.get((state, transition))
    if target is None:
        raise IllegalTransition(state, transition, pod_key)
    return target


def legal_from(state: PodState) -> frozenset[Transition]:
    return frozenset(t for (s, t) in TABLE if s is state)


def charges(state: PodState) -> bool:
    """Whether a pod in this state counts against its node's resources."""
    return state in CHARGING


def pending(state: PodState) -> bool:
    return state in PENDING_STATES
