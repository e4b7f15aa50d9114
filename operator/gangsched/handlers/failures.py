"""How `gangsched run` fails: one or two lines naming the problem and the fix, an exit code of gangsched/exits.py,
no traceback.

Contract:
- `await preflight(client)`: before anything starts, the API server answers, accepts the credentials and lets the
  identity list nodes (k8s/diagnose.py `check_access`, within ~10 s); else CommandError (API) naming the server,
  the cause and, for a 403, the RBAC manifest to apply.
- `listening(setting, port)`: binding a port to serve on; an OSError becomes CommandError(LISTEN) naming the key.
- `explain(exc) -> CommandError`: any exception that ended the command: a CommandError as it is, credentials for a
  plain-http server or a CredentialError (USAGE), an ApiError as k8s/diagnose.py words it, anything else FAILURE.
More: docs/modules.md#handlersfailurespy.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator

from gangsched.exits import CommandError, ExitCode
from gangsched.k8s.client import KubeClient
from gangsched.k8s.credentials import CredentialError, InsecureTransportError
from gangsched.k8s.diagnose import api_problem, check_access, credential_problem
from gangsched.k8s.errors import ApiError

RBAC_FIX = (
    "grant the operator's identity the ClusterRole of manifests/rbac.yaml (kubectl apply -f manifests/rbac.yaml)"
    " and run it as the gangsched ServiceAccount, or use a kubeconfig with those rights"
)


async def preflight(client: KubeClient) -> None:
    """The API server answers and lets this identity read nodes (k8s/diagnose.py `check_access`)."""
    await check_access(client, need=RBAC_FIX)


@contextlib.contextmanager
def listening(setting: str, port: int) -> Iterator[None]:
    """Bind inside this block; a port that cannot be bound becomes a CommandError naming `setting`."""
    try:
        yield
    except OSError as exc:
        why = "is already in use" if exc.errno == errno.EADDRINUSE else f"cannot be served on ({exc.strerror or exc})"
        raise CommandError(
            ExitCode.LISTEN,
            f"{setting} {port} {why}",
            f"stop what listens on port {port}, or set another {setting} in the config file (--config)",
        ) from None


def explain(exc: BaseException, server: str | None = None) -> CommandError:
    """The CommandError to report for an exception that ended `gangsched run`."""
    if isinstance(exc, CommandError):
        return exc
    if isinstance(exc, InsecureTransportError):  # one line: the message names the fix (https, --allow-insecure-http)
        return CommandError(ExitCode.USAGE, str(exc))
    if isinstance(exc, CredentialError):
        return credential_problem(exc)
    if isinstance(exc, ApiError):
        return api_problem(exc, server=server or "the kubeconfig's server", need=RBAC_FIX)
    return CommandError(
        ExitCode.FAILURE,
        f"the operator stopped: {str(exc) or type(exc).__name__}",
        "see the log above; the Deployment restarts it (or run `gangsched run` again)",
    )
