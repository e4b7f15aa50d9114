"""gangsched.models: parsing and validation at the boundary, from API objects and files to core values.

Contract: every parser raises core.errors.InvalidField (field, value, what is allowed) on bad input. This package
imports nothing on purpose, so that the per-pod hot path (`models.gang`) never loads pydantic.
- keys.py: label and annotation keys; pod.py, node.py: pods and nodes -> core records (plain dicts, no pydantic)
- selectors.py, pdb.py, timestamps.py, fields.py, duration.py, min_resources.py: shared readers
- gang.py, annotations.py, podgroup.py (and the other gang APIs' modules): gang declarations -> GangSpec
- config.py: the operator's config file; topology.py, rank.py: the topology ConfigMap and member ranks
- dra.py: ResourceSlices, DeviceClasses, ResourceClaims -> core/devices records
More: docs/modules.md#models__init__py.
"""
