"""What each workload controller writes when gang scheduling is turned on, built the way its source builds it (no
controller runs here: the tests create what the controller would; tests/workloads.py builds the workload objects
and their pods, this module adds the gang declaration each controller writes). Shared by the e2e matrix
tests/e2e/test_kubectl_controllers.py.

Each `Controller` says, for a workload of `n` members: which objects exist before its pods (`setup`: the workload;
`then`: what the controller creates from it, a TrainJob's JobSet), the gang declaration it writes (`declarations`: its
PodGroup), the pods in the rank order the controller means (`pods`; `attempt` > 0 is a restart: the pods the
controller creates again, with new names where it names them anew), the PodGroup gangsched's status is read from,
and a label selector of every pod of the workload. Template annotations (`annotations`) are copied onto every pod,
as each controller copies its pod template's metadata (so users ask for topology there).

Sources (paths in each repository; docs/integrations.md lists them too):
- training-operator: pkg/controller.v1/common/scheduling.go (`SyncPodGroup`: PodGroup named like the job, controller
  ownerReference, job annotations copied), pkg/controller.v1/common/job.go (`minMember` = sum of replicas,
  `scheduleTimeoutSeconds`, `minResources`), pkg/controller.v1/control/podgroup_control.go
  (`DecoratePodTemplateSpec`: label `scheduling.x-k8s.io/pod-group`, schedulerName = `--gang-scheduler-name`),
  pkg/controller.v1/common/pod.go (pods `<job>-<type>-<index>`, same names when re-created).
- mpi-operator: pkg/controller/podgroup.go (`SchedulerPluginsCtrl.newPodGroup`: named like the MPIJob, controller
  ownerReference, `calculateMinAvailable` = workers + 1, `calPGMinResource`; `decoratePodTemplateSpec`: label and
  schedulerName on workers and the launcher Job's template), pkg/controller/mpi_job_controller.go (pods).
- Trainer: pkg/runtime/framework/plugins/coscheduling/coscheduling.go (PodGroup named like the TrainJob, controller
  ownerReference, `minMember` = sum of the PodSets' counts, `scheduleTimeoutSeconds`, label on every replicated
  job's template), pkg/runtime/framework/plugins/jobset/jobset.go (the JobSet of the TrainJob's name, owned by it);
  Trainer sets no schedulerName (the runtime's template does).
- KubeRay: ray-operator/controllers/ray/batchscheduler/scheduler-plugins/scheduler_plugins.go (PodGroup named like
  the RayCluster, ownerReference not marked controller, `minMember` = desired workers + 1, label, hard-coded
  `schedulerName: scheduler-plugins-scheduler`), ray-operator/controllers/ray/utils/util.go (`PodGenerateName`: head
  `<cluster>-head-<random>`, workers `<cluster>-<group>-worker-<random>`), common/pod.go (labels `ray.io/*`).
- LeaderWorkerSet: pkg/schedulerprovider/volcano_provider.go (`InjectPodGroupMetadata`: annotation
  `scheduling.k8s.io/group-name` = `<lws>-<group>-<revision>`), pkg/webhooks/pod_webhook.go (size, indexes).
- Kueue: pkg/controller/jobs/pod/constants/constants.go (label `kueue.x-k8s.io/pod-group-name`, annotation
  `kueue.x-k8s.io/pod-group-total-count`, gate `kueue.x-k8s.io/admission`, label `kueue.x-k8s.io/managed`).
- Spark operator: internal/scheduler/kubescheduler/scheduler.go and util.go (PodGroup `<app>-pg`, minMember 1,
  minResources driver + executors, label on the app), internal/controller/sparkapplication/submission.go (labels
  onto driver and executors), internal/webhook/sparkpod_defaulter.go (schedulerName, driver ownerReference).
- JobSet: api/jobset/v1alpha2/jobset_types.go, pkg/controllers/jobset_controller.go (labels; a restart re-creates
  every Job's pods, label `jobset.sigs.k8s.io/restart-attempt`); the gang is declared in the template (JobSet has
  no gang option), here with Koordinator's annotations as docs/integrations.md shows.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from typing import Any

from tests import workloads as w

PG_LABEL = "scheduling.x-k8s.io/pod-group"
KUBERAY_SCHEDULER = "scheduler-plugins-scheduler"
JOBSET_RESTART = "jobset.sigs.k8s.io/restart-attempt"
Obj = dict[str, Any]


def random_suffix(seed: str) -> str:
    """A name suffix as the apiserver's generateName / the Job controller gives one (5 characters), fixed per seed."""
    rng = random.Random(seed)
    return "".join(rng.choices(string.ascii_lowercase + string.digits, k=5))


def owner_ref(obj: Obj, *, controller: bool = True) -> Obj:
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def podgroup(name: str, n: int, owner: Obj, *, cpu: int, controller: bool = True, **spec: Any) -> Obj:
    """A scheduling.x-k8s.io PodGroup as the scheduler-plugins integrations write it (minResources: the members'
    summed requests)."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [owner_ref(owner, controller=controller)],
            "annotations": dict(owner["metadata"].get("annotations") or {}),
        },
        "spec": {"minMember": n, "minResources": {"cpu": str(cpu * n)}, **spec},
    }


def decorate(pods: list[Obj], *, scheduler: str, labels: dict[str, str], annotations: dict[str, str]) -> list[Obj]:
    """What the gang integration adds to every pod: the scheduler name, labels, the template's annotations."""
    for p in pods:
        p["spec"]["schedulerName"] = scheduler
        p["metadata"]["labels"].update(labels)
        p["metadata"]["annotations"] = {**annotations, **(p["metadata"].get("annotations") or {})}
    return pods


@dataclass(frozen=True)
class Controller:
    """One controller's objects (see the module docstring). `kind` is the test id."""

    kind: str
    scheduler: str = w.GANGSCHED

    def setup(self, name: str, n: int) -> Obj | None:
        """The workload object, created before anything else (None: the pods are the workload, as Kueue's)."""
        return None

    def then(self, workload: Obj, n: int) -> Obj | None:
        """An object the controller creates from the created workload before the pods (a TrainJob's JobSet)."""
        return None

    def declarations(self, created: list[Obj], name: str, n: int, cpu: int) -> list[Obj]:
        return []

    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        raise NotImplementedError

    def podgroup(self, name: str) -> str:
        return name

    def inferred_podgroup(self, name: str) -> str:
        """The gang gangsched infers from the workload (docs/annotations.md "Gangs inferred from workloads")."""
        return name

    def selector(self, name: str) -> str:
        raise NotImplementedError

    def gates(self) -> bool:
        """True when the controller creates its pods gated and lifts the gates once the group is complete."""
        return False


class PyTorchJob(Controller):
    def setup(self, name: str, n: int) -> Obj | None:
        job = w.pytorchjob(name, workers=n - 1)
        job["spec"]["runPolicy"] = {"schedulingPolicy": {"scheduleTimeoutSeconds": 300}}
        return job

    def declarations(self, created: list[Obj], name: str, n: int, cpu: int) -> list[Obj]:
        return [podgroup(name, n, created[0], cpu=cpu, scheduleTimeoutSeconds=300)]

    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        # master-0, worker-0.. (rank order: master is rank 0); the same names when re-created
        made = w.pytorch_pods(created[0])
        return decorate(made, scheduler=self.scheduler, labels={PG_LABEL: name}, annotations=annotations)

    def selector(self, name: str) -> str:
        return f"training.kubeflow.org/job-name={name}"


class MPIJob(Controller):
    def setup(self, name: str, n: int) -> Obj | None:
        return w.mpijob(name, workers=n - 1)

    def declarations(self, created: list[Obj], name: str, n: int, cpu: int) -> list[Obj]:
        return [podgroup(name, n, created[0], cpu=cpu)]  # workers + 1; no timeout unless the policy sets one

    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        launcher, *workers = w.mpi_pods(created[0], suffix=random_suffix(f"{name}-launcher-{attempt}"))
        # rank order: the workers by replica-index, then the launcher (no index: after them)
        made = [*workers, launcher]
        return decorate(made, scheduler=self.scheduler, labels={PG_LABEL: name}, annotations=annotations)

    def selector(self, name: str) -> str:
        return f"training.kubeflow.org/job-name={name}"


class TrainJob(Controller):
    def setup(self, name: str, n: int) -> Obj | None:
        tj = w.trainjob(name)
        tj["spec"]["trainer"] = {"numNodes": n}
        return tj

    def then(self, workload: Obj, n: int) -> Obj | None:
        return w.trainjob_jobset(workload, [("node", 1, n)])  # Trainer's torch runtimes: one replicated job "node"

    def declarations(self, created: list[Obj], name: str, n: int, cpu: int) -> list[Obj]:
        return [podgroup(name, n, created[0], cpu=cpu, scheduleTimeoutSeconds=60)]  # the policy's default 60 s

    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        made = w.jobset_pods(created[1], suffix=random_suffix(f"{name}-{attempt}"))
        labels = {PG_LABEL: name, JOBSET_RESTART: str(attempt)}
        return decorate(made, scheduler=self.scheduler, labels=labels, annotations=annotations)

    def selector(self, name: str) -> str:
        return f"jobset.sigs.k8s.io/jobset-name={name}"


class KubeRay(Controller):
    def setup(self, name: str, n: int) -> Obj | None:
        rc = w.raycluster(name, workers=n - 1)
        rc["metadata"]["labels"] = {"ray.io/gang-scheduling-enabled": "true"}
        group = rc["spec"]["workerGroupSpecs"][0]
        group["minReplicas"] = group["maxReplicas"] = n - 1
        return rc

    def declarations(self, created: list[Obj], name: str, n: int, cpu: int) -> list[Obj]:
        return [podgroup(name, n, created[0], cpu=cpu, controller=False)]

    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        head, *workers = w.ray_pods(created[0])
        head["metadata"]["name"] = f"{name}-head-{random_suffix(f'{name}-head-{attempt}')}"
        for i, p in enumerate(workers):
            p["metadata"]["name"] = f"{name}-gpu-worker-{random_suffix(f'{name}-{i}-{attempt}')}"
        # rank order: the head (ray.io/node-type: head) first; the workers carry no index: natural name order
        made = [head, *sorted(workers, key=lambda p: str(p["metadata"]["name"]))]
        return decorate(made, scheduler=KUBERAY_SCHEDULER, labels={PG_LABEL: name}, annotations=annotations)

    def selector(self, name: str) -> str:
        return f"ray.io/cluster={name}"


REVISION = "5d4b9c7f6"


class LeaderWorkerSet(Controller):
    def setup(self, name: str, n: int) -> Obj | None:
        return w.lws(name, replicas=1, size=n)

    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        made = w.lws_group_pods(created[0], 0)  # leader, workers 1..n-1 (worker-index = rank); same names again
        volcano = {"scheduling.k8s.io/group-name": self.podgroup(name)}
        for p in made:
            p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/template-revision-hash"] = REVISION
        return decorate(made, scheduler=self.scheduler, labels={}, annotations={**annotations, **volcano})

    def podgroup(self, name: str) -> str:
        return f"{name}-0-{REVISION}"

    def inferred_podgroup(self, name: str) -> str:
        return f"{name}-0"

    def selector(self, name: str) -> str:
        return f"leaderworkerset.sigs.k8s.io/name={name}"


class KueuePods(Controller):
    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        labels = {
            "kueue.x-k8s.io/queue-name": "user-queue",
            "kueue.x-k8s.io/pod-group-name": name,
            "kueue.x-k8s.io/managed": "true",
        }
        made = [w._pod(f"{name}-{attempt}-{i}", labels=dict(labels)) for i in range(n)]  # natural name order
        for p in made:
            p["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": str(n)}
            p["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
        return decorate(made, scheduler=self.scheduler, labels={}, annotations=annotations)

    def selector(self, name: str) -> str:
        return f"kueue.x-k8s.io/pod-group-name={name}"

    def gates(self) -> bool:
        return True


class JobSet(Controller):
    def setup(self, name: str, n: int) -> Obj | None:
        return w.jobset(name, [("workers", 2, n // 2)] if n % 2 == 0 else [("workers", 1, n)])

    def pods(self, created: list[Obj], name: str, n: int, annotations: dict[str, str], attempt: int) -> list[Obj]:
        made = w.jobset_pods(created[0], suffix=random_suffix(f"{name}-{attempt}"))  # rank order (global index)
        gang = {
            "gang.scheduling.koordinator.sh/name": name,
            "gang.scheduling.koordinator.sh/min-available": str(n),
            "gang.scheduling.koordinator.sh/waiting-time": "5m",
        }
        labels = {JOBSET_RESTART: str(attempt)}
        return decorate(made, scheduler=self.scheduler, labels=labels, annotations={**annotations, **gang})

    def selector(self, name: str) -> str:
        return f"jobset.sigs.k8s.io/jobset-name={name}"


def undeclared(pods: list[Obj]) -> list[Obj]:
    """The same pods with the controller's gang integration off (no PodGroup label, no gang annotations; the
    scheduler name set in the templates by the user): the gang is inferred from the workload, if at all."""
    for p in pods:
        meta = p["metadata"]
        meta["labels"].pop(PG_LABEL, None)
        meta["annotations"] = {
            k: v
            for k, v in meta["annotations"].items()
            if not k.startswith("gang.scheduling.koordinator.sh/") and k != "scheduling.k8s.io/group-name"
        }
        p["spec"]["schedulerName"] = w.GANGSCHED
    return pods


CONTROLLERS = [
    PyTorchJob("pytorchjob"),
    MPIJob("mpijob"),
    TrainJob("trainjob"),
    KubeRay("kuberay", scheduler=KUBERAY_SCHEDULER),
    LeaderWorkerSet("leaderworkerset"),
    KueuePods("kueue"),
    JobSet("jobset"),
]


# ------------------------------------------------------------------------------------------------ Spark operator
SPARK_CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "sparkapplications.sparkoperator.k8s.io"},
    "spec": {
        "group": "sparkoperator.k8s.io",
        "names": {"kind": "SparkApplication", "listKind": "SparkApplicationList", "plural": "sparkapplications"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def spark_application(name: str, *, executors: int, cpu: int) -> Obj:
    """A SparkApplication with `spec.batchScheduler: gangsched` (charts/spark-operator-chart: `controller.
    batchScheduler.kubeSchedulerNames: [gangsched]`)."""
    return {
        "apiVersion": "sparkoperator.k8s.io/v1beta2",
        "kind": "SparkApplication",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "type": "Scala",
            "mode": "cluster",
            "batchScheduler": w.GANGSCHED,
            "image": "spark:3.5.3",
            "mainClass": "org.apache.spark.examples.SparkPi",
            "mainApplicationFile": "local:///opt/spark/examples/jars/spark-examples.jar",
            "sparkVersion": "3.5.3",
            "driver": {"cores": cpu, "memory": "512m"},
            "executor": {"instances": executors, "cores": cpu, "memory": "512m"},
        },
    }


def spark_podgroup(app: Obj, cpu: int) -> Obj:
    """internal/scheduler/kubescheduler/scheduler.go `Schedule`: PodGroup `<app>-pg` (util.go `getPodGroupName`),
    controller ownerReference the SparkApplication, minMember 1, minResources = driver + executor requests."""
    executors = app["spec"]["executor"]["instances"]
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": f"{app['metadata']['name']}-pg",
            "namespace": "default",
            "ownerReferences": [owner_ref(app)],
        },
        "spec": {"minMember": 1, "minResources": {"cpu": str(cpu * (1 + executors))}},
    }


def _spark_labels(app: Obj, role: str, submission: str) -> dict[str, str]:
    """The app's labels (with the PodGroup label `Schedule` put on it) and the operator's and Spark's own, which
    internal/controller/sparkapplication/submission.go passes to spark-submit for the driver and executors."""
    name = app["metadata"]["name"]
    return {
        PG_LABEL: f"{name}-pg",
        "sparkoperator.k8s.io/app-name": name,
        "sparkoperator.k8s.io/launched-by-spark-operator": "true",
        "sparkoperator.k8s.io/submission-id": submission,
        "spark-app-selector": f"spark-{submission[:12]}",
        "spark-role": role,
    }


def spark_driver(app: Obj, cpu: int, attempt: int) -> Obj:
    """The driver pod `<app>-driver` (the same name on every submission), owned by the SparkApplication
    (internal/webhook/sparkpod_defaulter.go `addOwnerReference`), schedulerName = `spec.batchScheduler`
    (`addSchedulerName`)."""
    submission = random_suffix(f"{app['metadata']['name']}-{attempt}") * 7
    pod = w._pod(f"{app['metadata']['name']}-driver", labels=_spark_labels(app, "driver", submission), cpu=str(cpu))
    pod["metadata"]["ownerReferences"] = [owner_ref(app)]
    return pod


def spark_executors(app: Obj, driver: Obj, cpu: int, attempt: int) -> list[Obj]:
    """The executors the driver asks for once it runs: `<app>-<hex>-exec-<id>`, owned by the driver pod (Spark's
    Kubernetes backend), with the app's labels; the webhook sets the scheduler name on them too."""
    submission = driver["metadata"]["labels"]["sparkoperator.k8s.io/submission-id"]
    prefix = f"{app['metadata']['name']}-{random_suffix(f'exec-{attempt}')}"
    out = []
    for i in range(1, app["spec"]["executor"]["instances"] + 1):
        labels = {**_spark_labels(app, "executor", submission), "spark-exec-id": str(i)}
        pod = w._pod(f"{prefix}-exec-{i}", labels=labels, cpu=str(cpu))
        pod["metadata"]["ownerReferences"] = [owner_ref(driver)]
        out.append(pod)
    return out


# the workloads gangsched infers a gang from, with their controllers' gang integration off
INFERRED = [c for c in CONTROLLERS if c.kind not in ("kueue",)]
