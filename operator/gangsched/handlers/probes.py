"""The probe endpoints of one replica: /livez, /readyz (and /healthz, both at once), served on the probes port.

Contract:
- `serve_probes(operator, port, host="0.0.0.0") -> runner` starts an aiohttp server (no access log);
  `await runner.cleanup()` stops it.
- GET /livez: 200 while the replica makes progress; 500 with `problems` while a vital task is down or the leader
  owes a round past progressDeadlineSeconds. API-side problems never fail /livez.
- GET /readyz: 200 when the caches are synced (followers too), 503 while leader election or the API has a problem
  (403s, a stale pod cache, bindings failing); the JSON body lists `ready`, `problem(s)`, `leader`, `identity`,
  `term`, `holder`, `cacheStaleSeconds`, `bindsFailingSeconds`, `forbidden`.
- GET /readyz/synced: 200 once synced (the startupProbe); GET /healthz: both bodies, 200 only if live.
More: docs/modules.md#handlersprobespy.
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
