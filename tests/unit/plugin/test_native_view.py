"""plugin/native.py and view.py on Kubernetes 1.37's own objects (k8s.io/api scheduling/v1beta1 types.go: Workload
spec.podGroupTemplates[].{name, schedulingPolicy}; PodGroup spec.workloadRef {workloadName, templateName},
spec.schedulingPolicy basic | gang{minCount}; status condition PodGroupInitiallyScheduled)."""

from __future__ import annotations

from typing import Any

from gangsched.plugin.native import workload_rows
from gangsched.plugin.view import gangs_of, render_tree, unmatched


def workload(name: str, *templates: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"podGroupTemplates": [{"name": t, "schedulingPolicy": p} for t, p in templates]},
    }


def native(name: str, wl: str | None, template: str, policy: dict[str, Any], **status: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if wl is not None:
        spec["workloadRef"] = {"workloadName": wl, "templateName": template}
    return {"metadata": {"name": name, "namespace": "ml"}, "spec": spec, "status": status}


def test_rows_pair_templates_with_their_podgroups_and_name_strays() -> None:
    rows = workload_rows(
        [workload("w", ("a", {"gang": {"minCount": 2}}), ("b", {"basic": {}}))],
        [
            native("w-a-0", "w", "a", {"gang": {"minCount": 2}}),
            native("w-a-1", "w", "a", {"gang": {"minCount": 2}}),
            native("w-z", "w", "z", {"basic": {}}),  # a template the Workload does not have
            native("alone", None, "", {"basic": {}}),  # a standalone PodGroup: no Workload row
        ],
    )
    (row,) = rows
    assert [(t.name, t.policy, t.podgroups, t.missing) for t in row.templates] == [
        ("a", "gang minCount 2", ["w-a-0", "w-a-1"], False),
        ("b", "basic", [], False),
        ("z", "?", ["w-z"], True),
    ]


def test_a_native_gang_waits_with_its_condition_and_a_workload_name_is_no_missing_gang() -> None:
    unschedulable = {"type": "PodGroupInitiallyScheduled", "status": "False", "message": "0/2 nodes fit"}
    pg = native("w-a-0", "w", "a", {"gang": {"minCount": 2}}, conditions=[unschedulable])
    gangs = gangs_of([], [], [pg])
    gang = gangs["ml/w-a-0"]
    assert (gang.phase, gang.min_member, gang.blocker(), gang.scheduled) == ("", 2, "0/2 nodes fit", 0)
    rows = workload_rows([workload("w", ("a", {"gang": {"minCount": 2}}))], [pg])
    text = render_tree(gangs, ["w"], {}, rows)
    assert text.splitlines()[0] == "workload ml/w  templates 1" and "gang ml/w-a-0" in text, text
    assert unmatched(gangs, ["w", "nope"], rows) == ["nope"]


def test_a_basic_native_podgroup_is_no_waiting_gang() -> None:
    from gangsched.plugin.view import waiting_rows

    gangs = gangs_of([], [], [native("solo", None, "", {"basic": {}})])
    assert gangs["ml/solo"].phase == "Basic" and gangs["ml/solo"].min_member is None
    assert waiting_rows(gangs, 0.0) == []
