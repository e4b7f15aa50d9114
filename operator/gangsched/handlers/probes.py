"""The probe endpoints of one replica: /livez, /readyz (and /healthz, both at once), served on the probes port.

Contract:
- `serve_probes(operator, port, host="0.0.0.0") -> runner` starts an aiohttp server in the running loop;
  `await runner.cleanup()` stops it. Requests are not logged (no access log): kubelet probes every few seconds.
- GET /livez: 200 {"ok": true} while the replica makes progress; 500 {"ok": false, "problems": [...]} while a
  vital supervised task is down or the leader has owed a scheduling round for longer than
  progressDeadlineSeconds (Operator.liveness_problems). A follower, or a gang that never fits, is alive.
- GET /readyz: 200 when the caches are synced (a follower is ready too: rolling updates and the PDB need it),
  503 otherwise, and 503 while leader election has a problem only the user can fix (a missing namespace, a
  forbidden Lease) or the API has one (Operator.api_problems: a request answered 403 Forbidden, the pod cache
  stale: no pod watch open for longer than readiness.staleCacheSeconds, bindings failing with none succeeding for
  longer than readiness.bindsFailingSeconds). The JSON body has `ready`, `problem` (the first problem, naming the
  fix where there is one, or null), `problems` (all), `leader` (the same answer as the gangsched_leader metric),
  `identity`, `term`, `holder`, `cacheStaleSeconds`, `bindsFailingSeconds` and `forbidden` (the causes); the
  metrics carry the same (runtime/metrics.py). API-side problems never fail /livez: a restart does not cure the
  API, as kube-apiserver keeps such checks (etcd reachability) out of its own /livez.
- GET /readyz/synced: 200 once the caches are synced, whatever else /readyz says (one check alone, as
  kube-apiserver serves `/readyz/<check>`): the Deployment's startupProbe, which must not restart a replica for
  the API's problems.
- GET /healthz: both bodies; 200 only if live (kept for configurations that still probe /healthz).
"""

from __future__ import annotations

import orjson
from aiohttp import web

from gangsched.runtime.operator import Operator


def _json(body: object, status: int) -> web.Response:
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def probes_app(operator: Operator) -> web.Application:
    async def livez(_: web.Request) -> web.Response:
        problems = operator.liveness_problems()
        return _json({"ok": not problems, "problems": problems}, 200 if not problems else 500)

    async def readyz(_: web.Request) -> web.Response:
        body = operator.readiness()
        return _json(body, 200 if body["ready"] else 503)

    async def synced(_: web.Request) -> web.Response:
        ok = operator.ready.is_set() and operator.synced
        return _json({"ok": ok}, 200 if ok else 503)

    async def healthz(_: web.Request) -> web.Response:
        problems = operator.liveness_problems()
        body = {"ok": not problems, "problems": problems, "scheduler": operator.health(), **operator.readiness()}
        return _json(body, 200 if not problems else 500)

    app = web.Application()
    app.router.add_get("/livez", livez)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/readyz/synced", synced)
    app.router.add_get("/healthz", healthz)
    return app


async def serve_probes(operator: Operator, port: int, host: str = "0.0.0.0") -> web.AppRunner:
    runner = web.AppRunner(probes_app(operator), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
