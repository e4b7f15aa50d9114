"""gangsched.models: parsing and validation at the boundary, from API objects and files to core values.

Contract: every parser raises core.errors.InvalidField (field, value, what is allowed) on bad input. This
package imports nothing on purpose, so that the per-pod hot path (`models.gang`) never loads pydantic.
- keys.py           label and annotation keys (scheduler-plugins, Koordinator, legacy, gangsched's role)
- pod.py, node.py   pods and nodes -> core records (the per-pod hot path: plain dicts, no pydantic)
- selectors.py      label selectors and node selector terms -> core requirements (matched by core/fit/matching.py)
- pdb.py            PodDisruptionBudgets -> core/preemption/preempt_pdb.py budgets
- timestamps.py     metav1.Time / MicroTime read and written with datetime
- fields.py         small typed readers of raw dict fields shared by the parsers
- gang.py           parse_pod_gang(pod) -> PodGang | None; merge_gang_specs(podgroup, annotations)
- annotations.py    Koordinator annotations -> GangSpec field overrides (pods and PodGroups)
- duration.py       Go durations ("1h30m") for waiting-time
- podgroup.py       PodGroup pydantic models; podgroup_spec_from_api(obj) -> GangSpec
- min_resources.py  spec.minResources -> canonical amounts (core/values/resources.py's quantity parser)
- config.py         the operator config file: load_config(path) -> OperatorConfig
- topology.py, rank.py: the topology ConfigMap and member ranks (see those modules)
- dra.py            ResourceSlices, DeviceClasses, ResourceClaims -> core/devices records; status.allocation back
"""
