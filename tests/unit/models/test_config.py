"""models/config.py: the operator config file, its defaults and errors naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.config import OperatorConfig, config_from_mapping, load_config


def test_defaults_without_a_file() -> None:
    cfg = load_config(None)
    assert (cfg.scheduler_name, cfg.namespace, cfg.default_wait_seconds, cfg.score_strategy, cfg.bind_concurrency) == (
        "gangsched",
        "gangsched-system",
        600.0,
        "binpack",
        64,
    )
    assert (cfg.topology.config_map_name, cfg.topology.key, cfg.topology.node_label_tiers) == (
        "gangsched-topology",
        "topology.json",
        [],
    )
    le = cfg.leader_election
    assert (le.enabled, le.lease_name, le.lease_duration_seconds) == (True, "gangsched", 15.0)
    assert cfg.create_pod_groups_for_annotation_gangs is True
    assert (cfg.metrics_port, cfg.probes_port, cfg.probe_port) == (8080, 8081, 8081)


def test_a_yaml_file_overrides_what_it_names(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "schedulerName: my-gangs\n"
        "scoreStrategy: spread\n"
        "backoff: {initialSeconds: 0.5, maxSeconds: 30}\n"
        "topology: {nodeLabelTiers: [example.com/tor, example.com/leaf]}\n"
        "leaderElection: {enabled: false}\n"
        "createPodGroupsForAnnotationGangs: false\n"
    )
    cfg = load_config(path)
    assert (cfg.scheduler_name, cfg.score_strategy, cfg.backoff.initial_seconds, cfg.backoff.max_seconds) == (
        "my-gangs",
        "spread",
        0.5,
        30.0,
    )
    assert cfg.topology.node_label_tiers == ["example.com/tor", "example.com/leaf"]
    assert cfg.topology.key == "topology.json"  # untouched neighbours keep their defaults
    assert cfg.leader_election.enabled is False and cfg.create_pod_groups_for_annotation_gangs is False
    assert cfg.namespace == "gangsched-system"


def test_an_empty_file_is_all_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert load_config(path) == OperatorConfig.model_validate({})


@pytest.mark.parametrize(
    ("data", "field", "value", "allowed"),
    [
        pytest.param(
            {"scoreStrategy": "random"}, "scoreStrategy", "random", "one of binpack, spread", id="score-strategy"
        ),
        pytest.param(
            {"bindConcurrency": 0}, "bindConcurrency", 0, "must be an integer >= 1", id="bind-concurrency-zero"
        ),
        pytest.param(
            {"bindConcurrency": "64"}, "bindConcurrency", "64", "must be an integer", id="bind-concurrency-string"
        ),
        pytest.param({"defaultWaitSeconds": 0}, "defaultWaitSeconds", 0, "must be a number > 0", id="wait-zero"),
        pytest.param({"metricsPort": 70000}, "metricsPort", 70000, "<= 65535", id="port-range"),
        pytest.param(
            {"leaderElection": {"leaseDurationSeconds": -1}},
            "leaderElection.leaseDurationSeconds",
            -1,
            "must be a number > 0",
            id="nested-field",
        ),
        pytest.param(
            {"leaderElection": {"leaseDurationSeconds": 5, "renewDeadlineSeconds": 10}},
            "leaderElection",
            {"leaseDurationSeconds": 5, "renewDeadlineSeconds": 10},
            "retryPeriodSeconds < renewDeadlineSeconds < leaseDurationSeconds",
            id="lease-timings-ordered",
        ),
        pytest.param(
            {"backoff": {"initialSeconds": 10, "maxSeconds": 1}},
            "backoff",
            {"initialSeconds": 10, "maxSeconds": 1},
            "maxSeconds must be >= initialSeconds",
            id="backoff-ordered",
        ),
        pytest.param({"schedulerNmae": "x"}, "schedulerNmae", "x", "not a known setting", id="typo-rejected"),
        pytest.param(
            {"topology": {"nodeLabelTiers": "tor"}},
            "topology.nodeLabelTiers",
            "tor",
            "must be a list",
            id="tiers-not-a-list",
        ),
        pytest.param(
            {"leaderElection": {"enabled": "maybe"}},
            "leaderElection.enabled",
            "maybe",
            "must be true or false",
            id="bool",
        ),
        pytest.param(["a"], "config", ["a"], "must be a YAML mapping", id="not-a-mapping"),
    ],
)
def test_invalid_settings_name_field_value_and_allowed(data: Any, field: str, value: Any, allowed: str) -> None:
    with pytest.raises(InvalidField) as caught:
        config_from_mapping(data)
    assert (caught.value.field, caught.value.value) == (field, value)
    assert allowed in caught.value.allowed


def test_missing_file_names_the_option(tmp_path: Path) -> None:
    with pytest.raises(InvalidField) as caught:
        load_config(tmp_path / "nope.yaml")
    assert caught.value.field == "--config" and "readable YAML file" in caught.value.allowed


def test_broken_yaml_names_the_option(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("schedulerName: [unclosed\n")
    with pytest.raises(InvalidField) as caught:
        load_config(path)
    assert caught.value.field == "--config" and "valid YAML" in caught.value.allowed


def test_scheduler_config_carries_the_scheduling_fields() -> None:
    cfg = config_from_mapping(
        {
            "schedulerName": "g2",
            "defaultWaitSeconds": 20,
            "scoreStrategy": "spread",
            "backoff": {"initialSeconds": 2, "maxSeconds": 8},
        }
    )
    sc = cfg.scheduler_config()
    assert (
        sc.scheduler_name,
        sc.default_wait_seconds,
        sc.score_strategy,
        sc.backoff_initial_seconds,
        sc.backoff_max_seconds,
    ) == ("g2", 20.0, "spread", 2.0, 8.0)
