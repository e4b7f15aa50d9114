"""core/fit/pod_counts.py: counts of matching pods per node and per topology domain, incrementally, with a cycle's
overlay. Oracle: kube-scheduler interpodaffinity/filtering.go (topologyToMatchedTermCount: a pod counts in the
domain of its node's label, once per matching term; nodes without the label count nowhere) and
podtopologyspread/common.go countPodsMatchSelector (terminating pods skipped: `leaving=False`)."""

from __future__ import annotations

from gangsched.core.fit.pod_counts import Overlay, PodCounts, PodInfo
from gangsched.core.records.records import LabelSelector, NodeRecord, PodSelector, PodTerm

APP_WEB = LabelSelector((("app", "web"),), ())


def _nodes() -> dict[str, NodeRecord]:
    return {
        f"n{i}": NodeRecord(f"n{i}", {"cpu": 1000}, {"zone": f"z{i % 2}", "kubernetes.io/hostname": f"n{i}"})
        for i in range(4)
    } | {"bare": NodeRecord("bare", {"cpu": 1000}, {})}


def _web(ns: str = "default", leaving: bool = False) -> PodInfo:
    return PodInfo(ns, (("app", "web"),), (), leaving)


def test_counts_follow_charges_per_node_and_domain() -> None:
    nodes = _nodes()
    counts = PodCounts(nodes)
    counts.charge("default/a", "n0", _web())
    counts.charge("default/b", "n2", _web())
    counts.charge("default/c", "bare", _web())
    counts.charge("other/d", "n1", _web("other"))
    c = counts.counter((PodSelector(frozenset({"default"}), APP_WEB),), ["zone"])  # registered late: one scan
    assert c.by_node == {"n0": 1, "n2": 1, "bare": 1}
    assert dict(c.domains("zone")) == {"z0": 2}  # the node without the label counts in no domain
    assert c.total == 3
    counts.charge("default/a", "n1", _web())  # moved
    assert dict(c.domains("zone")) == {"z0": 1, "z1": 1}
    counts.charge("default/a", None, None)
    counts.charge("default/b", None, None)
    assert dict(c.domains("zone")) == {} and c.by_node == {"bare": 1}
    everywhere = counts.counter((PodSelector(None, APP_WEB),), ["zone"])
    assert everywhere.total == 2  # namespaces None: every namespace
    nothing = counts.counter((PodSelector(None, None),))
    assert nothing.total == 0  # a nil selector matches nothing


def test_leaving_pods_can_be_left_out_and_node_relabels_move_domains() -> None:
    nodes = _nodes()
    counts = PodCounts(nodes)
    counts.charge("default/a", "n0", _web(leaving=True))
    counts.charge("default/b", "n0", _web())
    spread = counts.counter((PodSelector(frozenset({"default"}), APP_WEB),), ["zone"], leaving=False)
    assert spread.by_node == {"n0": 1}
    old = nodes["n0"]
    nodes["n0"] = NodeRecord("n0", old.allocatable, {"zone": "z9"})
    counts.node_changed("n0", old, nodes["n0"])
    assert dict(spread.domains("zone")) == {"z9": 1}
    assert list(counts.nodes_in("zone", "z9")) == ["n0"]


def test_owners_and_change_log() -> None:
    counts = PodCounts(_nodes())
    term = PodTerm(PodSelector(frozenset({"default"}), APP_WEB), "zone")
    pos = counts.log_end()
    counts.charge("default/a", "n0", PodInfo("default", (("app", "db"),), (term,)))
    owner = counts.owners()[term]
    assert owner.domain("zone", "z0") == 1
    assert counts.changes_since(pos) == [(owner.id, "n0"), (owner.id, None)]  # None: the total left zero


def test_overlay_counts_tentative_placements_and_replays_them_into_late_counters() -> None:
    counts = PodCounts(_nodes())
    counts.charge("default/a", "n0", _web())
    overlay = Overlay(counts)
    first = counts.counter((PodSelector(frozenset({"default"}), APP_WEB),), ["zone"])
    changes = overlay.add("n1", _web(), 1)
    assert (first.id, "n1") in changes and (first.id, None) not in changes
    assert overlay.domain(first, "zone", "z1") == 1 and overlay.total(first) == 2
    late = counts.counter((PodSelector(None, APP_WEB),), ["kubernetes.io/hostname"])
    assert overlay.node_count(late, "n1") == 1 and overlay.domain(late, "kubernetes.io/hostname", "n1") == 1
    overlay.add("n1", _web(), -1)  # rolled back
    assert overlay.total(first) == 1 and overlay.domains(first, "zone") == {"z0": 1}
    assert first.total == 1  # the base never changes


def test_key_totals_count_only_nodes_with_the_label() -> None:
    counts = PodCounts(_nodes())
    counts.charge("default/a", "bare", _web())
    c = counts.counter((PodSelector(None, APP_WEB),), ["zone"])
    assert c.total == 1 and c.key_total["zone"] == 0
    overlay = Overlay(counts)
    changes = overlay.add("n0", _web(), 1)
    assert (c.id, None) in changes  # the key total left zero (the first pod rule changes everywhere)
    assert overlay.key_total(c, "zone") == 1
