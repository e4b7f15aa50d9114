"""The error every API call raises: `ApiError(status, reason, message)`.

Contract:
- `status` is the HTTP status (0 when no answer came: connection refused or reset, timeout); `reason` is the
  Kubernetes `Status.reason` (e.g. "NotFound", "Conflict"), else the HTTP reason phrase ("Bad Gateway"), else a
  label of ours ("ConnectionError", "InvalidResponse" for a 2xx body or watch line that is not JSON);
  `message` is the Status message, else a short excerpt of the body.
- `retry_after` is the server's `Retry-After` in seconds (header, or `details.retryAfterSeconds` of a Status),
  None when it gave none.
- `transient` says whether retrying the same request can succeed: 429, 5xx, no answer, or an unreadable answer.
"""

from __future__ import annotations


class ApiError(Exception):
    """A Kubernetes API call that did not succeed."""

    def __init__(self, status: int, reason: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Worth retrying: throttling, server errors, no answer, an answer cut short."""
        return self.status == 429 or self.status >= 500 or self.status == 0 or self.reason == "InvalidResponse"
