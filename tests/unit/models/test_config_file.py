"""models/config_file.py and load_config: every problem of a config file at once, keys given twice refused,
nesting bounded (issue 22 item 14).

Oracles: YAML 1.2 (3.2.1.3, "The content of a mapping node is an unordered set of key/value node pairs, with
the restriction that each of the keys is unique") and RFC 8259 4 ("The names within an object SHOULD be
unique"), which kubectl enforces for manifests (sigs.k8s.io/yaml strict decoding: `yaml: unmarshal errors:
mapping key "x" already defined`); kube-scheduler's own config loader
(pkg/scheduler/apis/config/validation: ValidateKubeSchedulerConfiguration aggregates every field error into one
utilerrors.NewAggregate list instead of stopping at the first).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gangsched.core.values.errors import InvalidField
from gangsched.models.config import InvalidConfig, load_config
from gangsched.models.config_file import MAX_DEPTH, read_document


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.yaml",
        "scoreStrategy: random\nbindConcurrency: 0\nleaderElection: {leaseDurationSeconds: -1}\nschedulerNmae: x\n",
    )
    with pytest.raises(InvalidConfig) as caught:
        load_config(path)
    fields = [p.field for p in caught.value.problems]
    assert fields == ["scoreStrategy", "bindConcurrency", "leaderElection.leaseDurationSeconds", "schedulerNmae"]
    text = str(caught.value)
    assert text.startswith(f"{path}: 4 problems:")
    assert 'scoreStrategy: invalid value "random": one of binpack, spread' in text
    assert "bindConcurrency: invalid value 0: must be an integer >= 1" in text
    assert "leaderElection.leaseDurationSeconds: invalid value -1: must be a number > 0" in text
    assert 'schedulerNmae: invalid value "x": not a known setting' in text
    assert isinstance(caught.value, InvalidField) and caught.value.field == "scoreStrategy"  # the first


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    text = "namespace: a\nleaderElection:\n  enabled: true\n  enabled: false\nnamespace: b\n"
    path = write(tmp_path, "dup.yaml", text)
    with pytest.raises(InvalidConfig) as caught:
        load_config(path)
    assert [str(p) for p in caught.value.problems] == [
        'namespace: invalid value "given twice": must be given once (line 1 and line 5)',
        'leaderElection.enabled: invalid value "given twice": must be given once (line 3 and line 4)',
    ]


def test_a_key_given_twice_inside_a_list_item_is_named_by_its_index() -> None:
    _, problems = read_document("a:\n  - {x: 1}\n  - {x: 1, x: 2}\n", source="x")
    assert [p.field for p in problems] == ["a[1].x"]


def test_duplicates_and_bad_values_are_reported_together(tmp_path: Path) -> None:
    path = write(tmp_path, "both.yaml", "metricsPort: 1\nmetricsPort: 70000\nscoreStrategy: nope\n")
    with pytest.raises(InvalidConfig) as caught:
        load_config(path)
    assert sorted(p.field for p in caught.value.problems) == ["metricsPort", "metricsPort", "scoreStrategy"]


def test_a_json_file_refuses_a_key_given_twice(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.json", '{"namespace": "a", "namespace": "b", "bindConcurrency": 0}')
    with pytest.raises(InvalidConfig) as caught:
        load_config(path)
    assert [p.field for p in caught.value.problems] == ["namespace", "bindConcurrency"]
    assert "given once" in caught.value.problems[0].allowed


def test_a_json_file_without_problems_loads(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.json", '{\n\t"namespace": "x",\n\t"backoff": {"initialSeconds": 2}\n}')
    config = load_config(path)
    assert (config.namespace, config.backoff.initial_seconds) == ("x", 2.0)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param("deep.yaml", "a: " + "[" * 5000 + "]" * 5000 + "\n", id="yaml-flow"),
        pytest.param("deep.yaml", "".join("  " * i + f"k{i}:\n" for i in range(3000)), id="yaml-block"),
        pytest.param("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", id="json"),
    ],
)
def test_deep_nesting_is_one_problem_not_a_recursion_error(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        load_config(write(tmp_path, name, text))
    assert len(caught.value.problems) == 1
    problem = caught.value.problems[0]
    assert problem.field == "--config" and problem.allowed == f"must nest at most {MAX_DEPTH} levels"
    assert len(str(caught.value).splitlines()) == 2


def test_nesting_up_to_the_bound_parses() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    data, problems = read_document(text, source="x")
    assert problems == [] and isinstance(data, list)
    data, problems = read_document(text, source="x", json_syntax=True)
    assert problems == [] and isinstance(data, list)


def test_yaml_merge_keys_may_still_be_overridden() -> None:
    data, problems = read_document("base: &b {x: 1}\nmine:\n  <<: *b\n  x: 2\n", source="x")
    assert problems == [] and data["mine"] == {"x": 2}


def test_a_brace_inside_a_json_string_does_not_count_as_nesting() -> None:
    data, problems = read_document('{"a": "' + "[" * 100 + '\\"["}', source="x", json_syntax=True)
    assert problems == [] and data["a"].startswith("[")
