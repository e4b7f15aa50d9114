"""Gang trees (issue 25 item 3): one model for Kubernetes 1.37's CompositePodGroup trees and Grove's PodGangs: every
node has a minimum (a leaf gang its minMember, a composite node minGroupCount of its children), admission is the
tree's, all or nothing at every node; hard topology constraints on any node (a tier, or a node label of its own).

Oracles:
- kube-scheduler 1.37's integration test TestCPGQueueing (test/integration/scheduler/podgroup/): "Pod add triggers
  queueing hint for unschedulable CPG root" (a root needing 2 groups holds every pod until the last group has its
  pods), "CPG schedules ready branch while unready subtree waits" (root minGroupCount 1: the ready branch schedules, the
  subtree short of a pod waits), "Intermediate CPG update (reduce minGroupCount)" (a middle node short holds the pods).
- Grove's PodGang (ai-dynamo/grove scheduler/api/core/v1alpha1/podgang.go: PodGroup.MinReplicas "the number of
  replicas that needs to be gang scheduled"), as KAI serves it (NVIDIA/KAI-Scheduler pkg/podgrouper/podgrouper/
  plugins/grove/grove_grouper.go: one subgroup per PodGang pod group, minAvailable = minReplicas, the gang needing
  every subgroup): a router and a decode group needing all 4 binds nothing when only 3 decode pods fit.
- Topology: KEP-5732 (topology-aware workload scheduling): `schedulingConstraints.topology[].key` places all the
  group's pods in one domain of that node label; nodes without the label are no domain.
"""

from __future__ import annotations

from gangsched.core.cycle.simulate import step
from gangsched.core.memory.scheduler_state import SchedulerState
from gangsched.core.values.config import SchedulerConfig
from gangsched.core.values.gangtree import DomainKey, GangTree, TreeNode
from tests.builders import add_gang, add_nodes, add_pod

CFG = SchedulerConfig(default_wait_seconds=30.0)  # one unit per cycle: a tree is one unit


def _serving_tree(domain: DomainKey | None = None) -> GangTree:
    root = TreeNode("default/serve", 2, ("default/router", "default/decode"), domain)
    return GangTree(root.key, (root, TreeNode("default/router", 1), TreeNode("default/decode", 4)), "PodGang")


def test_tree_binds_every_group_in_one_cycle_when_all_fit() -> None:
    c = SchedulerState()
    add_nodes(c, 5, gpu=1)
    tree = _serving_tree()
    router = add_gang(c, "router", 1, tree=tree, gpu=1)
    decode = add_gang(c, "decode", 4, tree=tree, gpu=1)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(router + decode)
    assert set(plan.satisfied) == {"default/router", "default/decode"}


def test_router_and_three_of_four_decode_pods_never_bind() -> None:
    """The held-out case: room for the router and 3 decode pods only; the decode group needs all 4: nothing binds."""
    c = SchedulerState()
    add_nodes(c, 4, gpu=1)
    tree = _serving_tree()
    add_gang(c, "router", 1, tree=tree, gpu=1)
    add_gang(c, "decode", 4, tree=tree, gpu=1)
    for now in (0.0, 1.0, 5.0, 40.0):  # through the waiting time
        plan = step(c, CFG, now)
        assert not plan.bindings
    assert not c.gangs["default/router"].satisfied and not c.gangs["default/decode"].satisfied


def test_root_waits_for_the_pods_of_every_group_it_needs() -> None:
    c = SchedulerState()
    add_nodes(c, 5, gpu=1)
    tree = _serving_tree()
    add_gang(c, "router", 1, tree=tree, gpu=1)
    add_gang(c, "decode", 3, min_member=4, tree=tree, gpu=1)  # the fourth decode pod does not exist yet
    plan = step(c, CFG, 0.0)
    assert not plan.bindings and not plan.reservations
    status = plan.gang_status["default/router"]
    assert status.reason == "WaitingForGangGroup"
    assert (
        "default/serve has 1 of minGroupCount 2 groups ready: default/decode has 3 of minMember 4 pods"
        in status.message
    )


def _three_levels(root_min: int) -> GangTree:
    nodes = (
        TreeNode("default/root", root_min, ("default/main", "default/sub")),
        TreeNode("default/main", 1),
        TreeNode("default/sub", 2, ("default/sub-1", "default/sub-2")),
        TreeNode("default/sub-1", 1),
        TreeNode("default/sub-2", 2),
    )
    return GangTree("default/root", nodes)


def test_ready_branch_schedules_while_the_unready_subtree_waits() -> None:
    c = SchedulerState()
    add_nodes(c, 8, gpu=1)
    tree = _three_levels(root_min=1)
    main = add_gang(c, "main", 1, tree=tree, gpu=1)
    add_gang(c, "sub-1", 1, tree=tree, gpu=1)
    add_gang(c, "sub-2", 1, min_member=2, tree=tree, gpu=1)  # short of a pod: the sub tree is not ready
    plan = step(c, CFG, 0.0)
    assert [k for k, _ in plan.bindings] == main
    assert "default/sub has 1 of minGroupCount 2 groups ready" in plan.gang_status["default/sub-1"].message


def test_a_middle_node_short_holds_the_whole_tree_when_the_root_needs_it() -> None:
    c = SchedulerState()
    add_nodes(c, 8, gpu=1)
    tree = _three_levels(root_min=2)
    add_gang(c, "main", 1, tree=tree, gpu=1)
    add_gang(c, "sub-1", 1, tree=tree, gpu=1)
    add_gang(c, "sub-2", 1, min_member=2, tree=tree, gpu=1)
    assert not step(c, CFG, 0.0).bindings
    late = add_pod(c, "sub-2-1", gang="default/sub-2", rank=1, gpu=1)
    plan = step(c, CFG, 1.0)
    assert late in {k for k, _ in plan.bindings}
    assert len(plan.bindings) == 4  # main, sub-1, and both sub-2 pods: the whole tree at once


def _racks(c: SchedulerState, sizes: dict[str, int]) -> None:
    for rack, n in sizes.items():
        for i in range(n):
            add_nodes(c, 1, prefix=f"{rack}-{i}-", gpu=1, labels={"example.com/rack": rack})


def test_a_label_key_is_a_domain_of_its_own() -> None:
    """A gang constrained to one value of a node label that is no tier: placed in one such domain or not at all;
    nodes without the label are never used."""
    c = SchedulerState()
    _racks(c, {"a": 2, "b": 3})
    add_nodes(c, 4, prefix="free-", gpu=1)  # no rack label: in no domain
    rack = DomainKey(label="example.com/rack")
    three = add_gang(c, "three", 3, domain=rack, gpu=1)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(three)
    assert {node.split("-")[0] for _, node in plan.bindings} == {"b"}
    add_gang(c, "four", 4, domain=rack, gpu=1, created=5.0)
    plan = step(c, CFG, 1.0)
    assert not plan.bindings  # rack a has 2 left, rack b none: 4 in one rack is impossible (4 unlabelled nodes free)


def test_a_composite_nodes_domain_holds_its_whole_subtree() -> None:
    """The root of a tree asks for one rack: its two groups (2 pods each) land in the same rack, the one able to
    hold all four, although a smaller rack would fit the first group better."""
    c = SchedulerState()
    _racks(c, {"a": 3, "b": 4})
    rack = DomainKey(label="example.com/rack")
    root = TreeNode("default/job", 2, ("default/ps", "default/workers"), rack)
    tree = GangTree(root.key, (root, TreeNode("default/ps", 2), TreeNode("default/workers", 2)))
    ps = add_gang(c, "ps", 2, tree=tree, gpu=1)
    workers = add_gang(c, "workers", 2, tree=tree, gpu=1)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(ps + workers)
    assert {node.split("-")[0] for _, node in plan.bindings} == {"b"}


def test_a_composite_domain_too_small_everywhere_binds_nothing() -> None:
    c = SchedulerState()
    _racks(c, {"a": 3, "b": 3})
    rack = DomainKey(label="example.com/rack")
    root = TreeNode("default/job", 2, ("default/ps", "default/workers"), rack)
    tree = GangTree(root.key, (root, TreeNode("default/ps", 2), TreeNode("default/workers", 2)))
    add_gang(c, "ps", 2, tree=tree, gpu=1)
    add_gang(c, "workers", 2, tree=tree, gpu=1)
    for now in (0.0, 1.0, 40.0):
        assert not step(c, CFG, now).bindings


def test_depth_and_ancestors() -> None:
    tree = _three_levels(1)
    assert tree.depth() == 3
    assert [n.key for n in tree.ancestors("default/sub-2")] == ["default/sub", "default/root"]
    assert sorted(tree.leaves()) == ["default/main", "default/sub-1", "default/sub-2"]


def test_a_tier_domain_on_the_root_keeps_the_tree_in_one_domain_of_that_tier() -> None:
    """The root asks for one tier-1 domain (a CompositePodGroup whose topology key is a tier's label): its two groups
    land in the one rack that holds both, though each alone would fit the other rack."""
    from gangsched.core.topology import Domain, TopologyTree

    c = SchedulerState()
    add_nodes(c, 2, prefix="a", gpu=1)
    add_nodes(c, 3, prefix="b", gpu=1)
    c.set_topology(
        TopologyTree.from_domains(
            [Domain(1, "rack-a", children=("a0", "a1")), Domain(1, "rack-b", children=("b0", "b1", "b2"))]
        )
    )
    root = TreeNode("default/job", 2, ("default/ps", "default/workers"), DomainKey(tier=1))
    tree = GangTree(root.key, (root, TreeNode("default/ps", 1), TreeNode("default/workers", 2)))
    ps = add_gang(c, "ps", 1, tree=tree, gpu=1)
    workers = add_gang(c, "workers", 2, tree=tree, gpu=1)
    plan = step(c, CFG, 0.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(ps + workers)
    assert {node[0] for _, node in plan.bindings} == {"b"}


def test_a_new_topology_replaces_the_tier_domains_a_tree_was_placed_in() -> None:
    """A topology ConfigMap update (the operator's set_topology) regroups the nodes: a tree constrained to one tier-1
    domain that fitted no rack of the old topology is placed in the one rack of the new topology that holds it (not
    refused again from domains memoized before the update). Oracle: KEP-5732's topology key is read from the nodes
    as they are at the cycle (kube-scheduler takes its snapshot per cycle, pkg/scheduler/schedule_one.go
    `sched.Cache.UpdateSnapshot`)."""
    from gangsched.core.topology import Domain, TopologyTree

    c = SchedulerState()
    names = add_nodes(c, 3, prefix="a", gpu=1) + add_nodes(c, 4, prefix="b", gpu=1)
    c.set_topology(TopologyTree.from_domains([Domain(1, f"rack-{n}", children=(n,)) for n in names]))
    root = TreeNode("default/job", 2, ("default/ps", "default/workers"), DomainKey(tier=1))
    tree = GangTree(root.key, (root, TreeNode("default/ps", 2), TreeNode("default/workers", 2)))
    ps = add_gang(c, "ps", 2, tree=tree, gpu=1)
    workers = add_gang(c, "workers", 2, tree=tree, gpu=1)
    first = step(c, CFG, 0.0)
    assert not first.bindings and not first.reservations  # one GPU per rack: no group fits one
    c.set_topology(
        TopologyTree.from_domains(
            [Domain(1, "rack-a", children=tuple(names[:3])), Domain(1, "rack-b", children=tuple(names[3:]))]
        )
    )
    plan = step(c, CFG, 1.0)
    assert sorted(k for k, _ in plan.bindings) == sorted(ps + workers)
    assert {node for _, node in plan.bindings} == {"b0", "b1", "b2", "b3"}
