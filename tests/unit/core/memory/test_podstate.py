"""core/podstate: every (state, transition) pair, legal or illegal, and the accounting each state implies; the
store's charges follow the state through a pod's whole life."""

from __future__ import annotations

import pytest

from gangsched.core.memory.podstate import (
    CHARGING,
    TABLE,
    IllegalTransition,
    PodState,
    Transition,
    advance,
    charges,
    legal_from,
    pending,
)
from gangsched.core.memory.scheduler_state import SchedulerState
from tests.builders import add_nodes, add_pod

S = PodState
T = Transition

# The specification, written out by hand (not derived from the table it checks).
DECISIONS: dict[tuple[PodState, Transition], PodState] = {
    (S.PENDING, T.NOMINATE): S.NOMINATED,
    (S.NOMINATED, T.NOMINATE): S.NOMINATED,
    (S.NOMINATED, T.CLEAR_NOMINATION): S.PENDING,
    (S.PENDING, T.RESERVE): S.RESERVED,
    (S.NOMINATED, T.RESERVE): S.RESERVED,
    (S.RESERVED, T.RESERVE): S.RESERVED,
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
UNBOUND_KEEPS = {S.PENDING, S.NOMINATED, S.RESERVED, S.BINDING}


def expected(state: PodState, transition: Transition) -> PodState | None:
    if transition is T.OBSERVE_BOUND:
        return S.BOUND
    if transition is T.OBSERVE_LEAVING:
        return S.LEAVING
    if transition is T.OBSERVE_TERMINAL:
        return S.TERMINAL
    if transition is T.OBSERVE_UNBOUND:
        return state if state in UNBOUND_KEEPS else S.PENDING
    return DECISIONS.get((state, transition))


ALL_PAIRS = [(s, t) for s in PodState for t in Transition]


@pytest.mark.parametrize(("state", "transition"), ALL_PAIRS, ids=[f"{s.value}-{t.value}" for s, t in ALL_PAIRS])
def test_every_transition_from_every_state(state: PodState, transition: Transition) -> None:
    target = expected(state, transition)
    if target is None:
        with pytest.raises(IllegalTransition) as err:
            advance(state, transition, "ns/p")
        message = str(err.value)
        assert f"illegal transition {transition.value!r} from state {state.value!r}" in message
        assert message.startswith("pod ns/p: ")
        assert transition not in legal_from(state)
    else:
        assert advance(state, transition) is target
        assert transition in legal_from(state)


def test_table_has_nothing_beyond_the_specification() -> None:
    assert set(TABLE) == {pair for pair in ALL_PAIRS if expected(*pair) is not None}


def test_charging_and_pending_states() -> None:
    assert {S.RESERVED, S.BINDING, S.ASSUMED, S.BOUND, S.LEAVING} == CHARGING
    assert [s for s in PodState if charges(s)] == [S.RESERVED, S.BINDING, S.ASSUMED, S.BOUND, S.LEAVING]
    assert [s for s in PodState if pending(s)] == [S.PENDING, S.NOMINATED]


def _cpu(c: SchedulerState) -> int:
    return sum(u.get("cpu", 0) for u in c.used.values())


def test_the_store_charges_exactly_while_the_state_charges() -> None:
    c = SchedulerState()
    add_nodes(c, 2, gpu=0)
    add_pod(c, "p", cpu="1")
    store = c.store
    assert (store.state_of("default/p"), _cpu(c)) == (S.PENDING, 0)
    store.nominate("default/p", "n0")
    assert (store.state_of("default/p"), _cpu(c), c.nomination_of("default/p")) == (S.NOMINATED, 0, "n0")
    store.reserve("default/p", "n1", binding=False)
    assert (store.state_of("default/p"), c.used["n1"]["cpu"], c.nomination_of("default/p")) == (S.RESERVED, 1000, None)
    store.release("default/p")
    assert (store.state_of("default/p"), _cpu(c)) == (S.PENDING, 0)
    store.reserve("default/p", "n0", binding=True)
    assert (store.state_of("default/p"), c.used["n0"]["cpu"]) == (S.BINDING, 1000)
    store.bind_succeeded("default/p")
    assert (store.state_of("default/p"), c.used["n0"]["cpu"], c.assumed) == (
        S.ASSUMED,
        1000,
        {"default/p": ("n0", "uid-p")},
    )
    add_pod(c, "p", cpu="1", node="n0")  # the watch shows it bound: confirmed
    assert (store.state_of("default/p"), c.used["n0"]["cpu"], c.assumed) == (S.BOUND, 1000, {})
    c.set_leaving("default/p", True)
    assert (store.state_of("default/p"), c.used["n0"]["cpu"]) == (S.LEAVING, 1000)
    add_pod(c, "p", cpu="1", node="n0", phase="Succeeded")
    assert (store.state_of("default/p"), _cpu(c)) == (S.TERMINAL, 0)
    c.remove_pod("default/p")
    assert (store.state_of("default/p"), c.used) == (None, {})


def test_an_illegal_decision_raises_and_changes_nothing() -> None:
    c = SchedulerState()
    add_nodes(c, 1, gpu=0)
    add_pod(c, "p", cpu="1")
    with pytest.raises(IllegalTransition, match="illegal transition 'release' from state 'pending'"):
        c.store.release("default/p")
    with pytest.raises(IllegalTransition, match="'bind-succeeded' from state 'pending'"):
        c.store.bind_succeeded("default/p")
    assert (c.store.state_of("default/p"), c.used) == (S.PENDING, {})
