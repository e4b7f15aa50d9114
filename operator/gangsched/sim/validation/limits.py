"""Size limits a real kube-apiserver enforces on every write (pure; the REST layer answers 413 or 422).

Contract:
- `MAX_REQUEST_BODY_BYTES` (3 MiB, `--max-resource-write-bytes`'s default); `body_too_large()` is the 413
  RequestEntityTooLarge answer to a larger body.
- `meta_problems(obj)`: annotations above 256 KiB in all -> `metadata.annotations: Too long` (every kind, on
  create and update).
- `configmap_problems(obj)`: `data` and `binaryData` above 1 MiB together -> `[]: Too long`.
Problems are (field, detail, cause reason) as rules.py gives them.
More: docs/modules.md#simvalidationlimitspy.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from gangsched.sim import status as st

Problem = tuple[str, str, str]

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)
MAX_CONFIGMAP_DATA_BYTES = 1 * 1024 * 1024  # core.MaxSecretSize, which ValidateConfigMap uses too


def body_too_large() -> st.ApiError:
    return st.ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}")


def _too_long(path: str, limit: int) -> Problem:
    return (path, f"Too long: must have at most {limit} bytes", "FieldValueTooLong")


def meta_problems(obj: dict[str, Any]) -> list[Problem]:
    """See module docstring."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    if not isinstance(annotations, dict):
        return []
    size = sum(len(str(k).encode()) + len(str(v if v is not None else "").encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        return [_too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT_B)]
    return []


def _decoded_len(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value)) * 3 // 4  # the decoder reports bad base64 itself (decode.py)


def configmap_problems(obj: dict[str, Any]) -> list[Problem]:
    """See module docstring."""
    data, binary = obj.get("data"), obj.get("binaryData")
    data = data if isinstance(data, dict) else {}
    binary = binary if isinstance(binary, dict) else {}
    size = sum(len(str(v if v is not None else "").encode()) for v in data.values())
    size += sum(_decoded_len(v) for v in binary.values() if v is not None)
    if size > MAX_CONFIGMAP_DATA_BYTES:
        return [_too_long("[]", MAX_CONFIGMAP_DATA_BYTES)]
    return []
