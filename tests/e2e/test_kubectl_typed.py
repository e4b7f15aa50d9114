"""The real kubectl (1.32) as users use it against the emulator: `kubectl create <built-in>` (protobuf bodies),
`kubectl apply -f` of a `kind: List` (what `kubectl get -o yaml` writes; needs /openapi/v2), `kubectl explain`
of built-in kinds (the real v1.32 schemas in /openapi/v3), server-side rejections of badly typed bodies, and
field selectors.

Sources: staging/src/k8s.io/apimachinery/pkg/runtime/serializer/protobuf/protobuf.go (the `k8s\\x00` envelope),
staging/src/k8s.io/kubectl/pkg/validation/schema.go (a List is validated item by item from /openapi/v2),
staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go (decode errors -> 400).
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import AsyncKubectl

pytestmark = pytest.mark.e2e


async def _ok(kctl: AsyncKubectl, *args: str, input: str | None = None) -> str:
    result = await kctl(*args, input=input)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


async def _get(kctl: AsyncKubectl, *args: str) -> dict[str, object]:
    parsed: dict[str, object] = json.loads(await _ok(kctl, "get", *args, "-o", "json"))
    return parsed


async def test_kubectl_create_builtin_kinds(kctl: AsyncKubectl) -> None:
    """kubectl sends these as application/vnd.kubernetes.protobuf; the emulator decodes them."""
    await _ok(kctl, "create", "namespace", "team-x")
    await _ok(kctl, "-n", "team-x", "create", "configmap", "cm", "--from-literal=a=b", "--from-literal=empty=")
    await _ok(kctl, "-n", "team-x", "create", "secret", "generic", "s", "--from-literal=k=v")
    await _ok(kctl, "-n", "team-x", "create", "serviceaccount", "robot")
    await _ok(
        kctl, "create", "priorityclass", "high", "--value=1000", "--description=important", "--preemption-policy=Never"
    )
    await _ok(kctl, "-n", "team-x", "create", "poddisruptionbudget", "pdb", "--selector=app=x", "--min-available=50%")
    await _ok(
        kctl,
        "-n",
        "team-x",
        "create",
        "role",
        "reader",
        "--verb=get,list",
        "--resource=pods,configmaps",
        "--resource-name=a",
    )
    await _ok(
        kctl,
        "-n",
        "team-x",
        "create",
        "rolebinding",
        "rb",
        "--role=reader",
        "--user=alice",
        "--serviceaccount=team-x:robot",
    )

    ns = await _get(kctl, "namespace", "team-x")
    assert ns["status"] == {"phase": "Active"}
    cm = await _get(kctl, "-n", "team-x", "configmap", "cm")
    assert cm["data"] == {"a": "b", "empty": ""}
    secret = await _get(kctl, "-n", "team-x", "secret", "s")
    assert secret["data"] == {"k": "dg=="} and secret["type"] == "Opaque"  # SetDefaults_Secret
    pc = await _get(kctl, "priorityclass", "high")
    assert (pc["value"], pc["description"], pc["preemptionPolicy"]) == (1000, "important", "Never")
    pdb = await _get(kctl, "-n", "team-x", "pdb", "pdb")
    assert pdb["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"app": "x"}}}
    role = await _get(kctl, "-n", "team-x", "role", "reader")
    assert role["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "configmaps"], "resourceNames": ["a"]}
    ]
    rb = await _get(kctl, "-n", "team-x", "rolebinding", "rb")
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
    assert rb["subjects"] == [
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": "team-x"},
    ]


async def test_kubectl_create_workloads_and_quota(kctl: AsyncKubectl) -> None:
    """The objects equal what kubectl builds (`--dry-run=client -o json`), decoded from protobuf."""
    for args in (
        ["deployment", "d", "--image=busybox", "--replicas=2", "--port=80"],
        ["job", "j", "--image=busybox", "--", "sleep", "1"],
        ["quota", "q", "--hard=pods=2,cpu=1", "--scopes=BestEffort"],
    ):
        expected = json.loads(await _ok(kctl, "create", *args[:2], "--dry-run=client", "-o", "json", *args[2:]))
        await _ok(kctl, "create", *args)
        got = await _get(kctl, expected["kind"].lower(), args[1])

        def clean(obj: object) -> object:  # `creationTimestamp: null` is what an absent Time prints as
            if isinstance(obj, dict):
                return {k: clean(v) for k, v in obj.items() if not (k == "creationTimestamp" and v is None)}
            return obj

        assert clean(got["spec"]) == clean(expected["spec"]), args


async def test_apply_a_list_written_by_get_o_yaml(kctl: AsyncKubectl) -> None:
    await _ok(kctl, "create", "configmap", "one", "--from-literal=a=1")
    await _ok(kctl, "create", "configmap", "two", "--from-literal=a=2")
    listing = await _ok(kctl, "get", "configmap", "one", "two", "-o", "yaml")
    assert "kind: List" in listing
    out = await _ok(kctl, "apply", "-f", "-", input=listing.replace('a: "1"', 'a: "changed"'))
    assert "configmap/one configured" in out
    cm = await _get(kctl, "configmap", "one")
    assert cm["data"] == {"a": "changed"}


async def test_explain_builtin_kinds(kctl: AsyncKubectl) -> None:
    out = await _ok(kctl, "explain", "pod.spec.containers.ports")
    assert "containerPort" in out and "<[]ContainerPort>" in out
    out = await _ok(kctl, "explain", "lease.spec")
    assert "leaseDurationSeconds" in out and "renewTime" in out


async def test_badly_typed_lease_is_rejected_with_the_decoder_message(kctl: AsyncKubectl) -> None:
    manifest = """
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l, namespace: default}
spec: {holderIdentity: me, leaseDurationSeconds: "15"}
"""
    result = await kctl("apply", "-f", "-", input=manifest)
    assert result.returncode != 0
    assert (
        'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal string into Go struct field '
        "LeaseSpec.spec.leaseDurationSeconds of type int32"
    ) in result.stderr
    result = await kctl("apply", "-f", "-", input=manifest.replace('"15"', "15, bogus: 1"))
    assert result.returncode != 0 and 'strict decoding error: unknown field "spec.bogus"' in result.stderr
    result = await kctl("apply", "--validate=warn", "-f", "-", input=manifest.replace('"15"', "15, bogus: 1"))
    assert result.returncode == 0, result.stderr
    assert 'unknown field "spec.bogus"' in result.stderr


async def test_field_selector_of_an_unsupported_label(kctl: AsyncKubectl) -> None:
    result = await kctl("get", "pods", "--field-selector", "spec.priority=1")
    assert result.returncode != 0 and "field label not supported: spec.priority" in result.stderr
    await _ok(kctl, "get", "pods", "--field-selector", "spec.nodeName=,status.phase=Pending")
