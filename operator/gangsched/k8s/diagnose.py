"""What a failure to talk to the API server means for a user: the problem and the fix, as an exits.CommandError.

Contract:
- `credential_problem(exc)`: the kubeconfig could not give credentials: USAGE, the loader's message, the fix.
- `api_problem(exc, *, server, need)`: no answer (the cause in words), 401 and 403 (`need` names the permission)
  are exit code API; anything else FAILURE with the status and message. `api_failure(...)`: either of the two.
- `await check_access(client, *, need)`: GET /version, then list one node, within ~10 s (CHECK_RETRY); raises
  api_problem's CommandError.
- `cause_of(exc)`: the short words for why no answer came.
More: docs/modules.md#k8sdiagnosepy.
"""

from __future__ import annotations

import os
import socket
import ssl

import aiohttp

from gangsched.exits import CommandError, ExitCode
from gangsched.k8s.client import KubeClient
from gangsched.k8s.credentials import CredentialError
from gangsched.k8s.errors import ApiError
from gangsched.k8s.retry import RetryPolicy

CHECK_RETRY = RetryPolicy(initial_backoff=0.5, max_backoff=4.0, max_attempts=4, max_elapsed=10.0)

READ_FIX = "use a kubeconfig whose user may read what the command reads (kubectl auth can-i list pods,nodes -A)"
KUBECONFIG_FIX = (
    "pass --kubeconfig PATH (or set KUBECONFIG) to a kubeconfig that works with `kubectl cluster-info`,"
    " or run in a cluster with a service account"
)


def credential_problem(exc: CredentialError) -> CommandError:
    return CommandError(ExitCode.USAGE, f"no credentials for the API server: {exc}", KUBECONFIG_FIX)


def cause_of(exc: BaseException) -> str:
    """Why a request got no answer, in words (no repr): the innermost aiohttp / OS / TLS reason."""
    cause = exc.__cause__ if isinstance(exc, ApiError) and exc.__cause__ is not None else exc
    if isinstance(cause, aiohttp.ClientConnectorCertificateError):
        return f"TLS certificate not trusted ({cause.certificate_error})"
    if isinstance(cause, aiohttp.ClientConnectorError):
        os_error = cause.os_error
        if isinstance(os_error, ssl.SSLError):
            return f"TLS handshake failed ({os_error.reason or os_error})"
        return _os_reason(os_error)
    if isinstance(cause, TimeoutError):
        return "no answer in time"
    if isinstance(cause, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(cause, aiohttp.ClientError):
        return type(cause).__name__
    return str(cause)


def _os_reason(error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return f"the host name does not resolve ({error.strerror})"
    if error.errno and error.errno > 0:
        return os.strerror(error.errno).lower()  # "connection refused", not "Connect call failed ('h', p)"
    return str(error.strerror or error)


def api_problem(exc: ApiError, *, server: str | None, need: str = READ_FIX) -> CommandError:
    at = f" at {server}" if server else ""
    if exc.status == 0:
        return CommandError(
            ExitCode.API,
            f"cannot reach the API server{at}: {cause_of(exc)}",
            "check that the cluster is up and that the kubeconfig's server is right (`kubectl cluster-info`)",
        )
    if exc.status == 401:
        return CommandError(
            ExitCode.API,
            f"the API server{at} refused the credentials (401 Unauthorized)",
            "renew the token or certificate, or choose another context (--context) or kubeconfig",
        )
    if exc.status == 403:
        return CommandError(ExitCode.API, f"forbidden by the API server{at}: {exc.message}", need)
    return CommandError(ExitCode.FAILURE, f"the API server{at} answered {exc}")


def api_failure(exc: ApiError | CredentialError, *, server: str | None = None, need: str = READ_FIX) -> CommandError:
    """Either kind of failure to talk to the API server, as a CommandError."""
    if isinstance(exc, CredentialError):
        return credential_problem(exc)
    return api_problem(exc, server=server, need=need)


async def check_access(client: KubeClient, *, need: str) -> None:
    """The API server answers and lets this identity list nodes (see the module docstring)."""
    try:
        await client.get("/version", retry=CHECK_RETRY)
        await client.get("/api/v1/nodes", params={"limit": "1"}, retry=CHECK_RETRY)
    except ApiError as exc:
        raise api_problem(exc, server=client.settings.server, need=need) from None
