"""Size limits a real kube-apiserver enforces on every write (pure; the REST layer answers 413 or 422).

Contract:
- `MAX_REQUEST_BODY_BYTES` (3 MiB): kube-apiserver's default `--max-resource-write-bytes`
  (staging/src/k8s.io/apiserver/pkg/server/config.go NewConfig: MaxRequestBodyBytes = 3 * 1024 * 1024);
  `body_too_large()` is the answer to a larger body, as handlers/rest.go limitedReadBody words it:
  413 RequestEntityTooLarge `Request entity too large: limit is 3145728`
  (apimachinery/pkg/api/errors NewRequestEntityTooLargeError).
- `meta_problems(obj)`: staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go ValidateAnnotations /
  ValidateAnnotationsSize: the annotations' keys and values together (bytes) above TotalAnnotationSizeLimitB
  (256 KiB = 262144) -> `metadata.annotations: Too long: must have at most 262144 bytes` (field.TooLong).
  Applies to every kind, built-in or custom, on create and update.
- `configmap_problems(obj)`: pkg/apis/core/validation/validation.go ValidateConfigMap: the values of `data`
  (bytes of UTF-8) and of `binaryData` (decoded bytes) together above core.MaxSecretSize (1 MiB = 1048576) ->
  `[]: Too long: must have at most 1048576 bytes` (field.TooLong on field.NewPath(""), printed `[]`).
Problems are (field, detail, cause reason) as rules.py gives them.
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
