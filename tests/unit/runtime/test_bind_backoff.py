"""The backoff of failed bindings (runtime/bind_backoff.py) and the 403 book (k8s/forbidden.py), issue 22 item 10.

Oracle: kube-scheduler's pod backoff (pkg/scheduler/backend/queue/scheduling_queue.go `calculateBackoffDuration`:
podInitialBackoffSeconds (1 s) doubled per failed attempt, at most podMaxBackoffSeconds (10 s); its table test
TestBackOffFlow in scheduling_queue_test.go expects 1, 2, 4, 8, 10, 10, 10 s). A pod whose binding failed waits that
backoff (schedule_one.go `handleBindingCycleError` -> `handleSchedulingFailure`). Over a minute at the cap, a pod
is tried 6 times. RBAC's 403 message (apiserver/pkg/endpoints/handlers/responsewriters/errors.go
`ForbiddenStatusError`) names the object; its cause does not depend on it. Clocks are injected.
"""

from __future__ import annotations

from gangsched.core.values.units import UnitKey
from gangsched.k8s.errors import ApiError
from gangsched.k8s.forbidden import ForbiddenBook, request_of
from gangsched.runtime.bind_backoff import BindBackoff

GANG = UnitKey.gang("default/g")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_delays_double_from_one_second_to_ten_as_kube_scheduler() -> None:
    backoff = BindBackoff(clock=FakeClock())
    assert [backoff.failed(GANG, 0.0) for _ in range(7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]


def test_attempts_per_minute_at_the_cap_are_six() -> None:
    backoff = BindBackoff(clock=FakeClock())
    t, attempts = 0.0, []
    while t < 120.0:
        attempts.append(t)
        t += backoff.failed(GANG, t)
    assert sum(1 for a in attempts if 60.0 <= a < 120.0) == 6


def test_a_success_resets_the_unit_and_ends_failing_since() -> None:
    backoff = BindBackoff(initial=0.1, maximum=1.0, clock=FakeClock())
    other = UnitKey.pod("default/p")
    assert backoff.retry_in_binder(GANG)
    backoff.failed(GANG, 5.0)
    backoff.failed(other, 6.0)
    assert not backoff.retry_in_binder(GANG) and _since(backoff) == 5.0
    backoff.succeeded(GANG)
    assert backoff.retry_in_binder(GANG) and _since(backoff) is None
    assert backoff.failed(GANG, 7.0) == 0.1 and backoff.failures(other) == 1


def _since(backoff: BindBackoff) -> float | None:
    return backoff.failing_since


def test_a_unit_not_failing_for_ten_minutes_is_forgotten() -> None:
    clock = FakeClock()
    backoff = BindBackoff(clock=clock)
    backoff.failed(GANG, 0.0)
    clock.now += 601.0
    assert backoff.failures(GANG) == 0


def _forbidden(pod: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'pods "{pod}" is forbidden: User "system:serviceaccount:gangsched-system:gangsched" cannot create '
        'resource "pods/binding" in API group "" in the namespace "default"',
    )


def test_a_forbidden_cause_is_new_once_whatever_the_pod_and_a_success_clears_it() -> None:
    clock = FakeClock()
    book = ForbiddenBook(clock=clock)
    assert book.note("create pods/binding", _forbidden("a"))
    assert not book.note("create pods/binding", _forbidden("b"))
    assert book.total == 2
    [cause] = book.causes()
    assert cause.startswith('create pods/binding: User "system:serviceaccount') and '"a"' not in cause
    book.clear("create events")
    assert book.causes() == [cause]
    book.clear("create pods/binding")
    assert book.causes() == [] and book.note("create pods/binding", _forbidden("c"))


def test_a_forbidden_cause_not_seen_for_the_hold_is_over() -> None:
    clock = FakeClock()
    book = ForbiddenBook(clock=clock, hold=60.0)
    book.note("create pods/binding", _forbidden("a"))
    clock.now += 61.0
    assert book.causes() == []
    assert book.note("create pods/binding", _forbidden("a"))  # logged again: it came back


def test_requests_are_named_as_rbac_authorizes_them() -> None:
    assert request_of("create", "/api/v1/namespaces/a/pods/p/binding") == "create pods/binding"
    assert request_of("patch", "/api/v1/namespaces/a/pods/p/status") == "patch pods/status"
    assert request_of("patch", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/a/podgroups/g/status") == (
        "patch podgroups/status"
    )
    assert request_of("create", "/api/v1/namespaces/a/events") == "create events"
    assert request_of("get", "/api/v1/nodes/n") == "get nodes"
