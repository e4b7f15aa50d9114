"""Authentication for the emulator: bearer tokens to users, as kube-apiserver's token authenticators do.

Contract:
- `UserInfo(name, uid, groups, extra)` is who a request is from (k8s.io/apiserver/pkg/authentication/user).
- `Authenticator(store)` knows static tokens (`add_static_token`, as `--token-auth-file`; `admin_token` for
  "kubernetes-admin" in system:masters) and service-account tokens minted by `mint_service_account_token(...)`
  (TokenRequest: HS256 JWTs with a bound token's claims), valid while unexpired, for the API server's audience and
  while their ServiceAccount exists with the same uid.
- `authenticate(authorization, path) -> UserInfo | None`: None means 401; without a token a request is
  system:anonymous only on /healthz, /livez and /readyz.
More: docs/modules.md#simauthpy.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gangsched.sim.store import Store

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
SA_KEY = ("", "serviceaccounts")


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False, compare=False)

    def as_status(self) -> dict[str, Any]:
        """The userInfo of a SelfSubjectReview / TokenReview status."""
        out: dict[str, Any] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            out["uid"] = self.uid
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra.items()}
        return out


ADMIN = UserInfo("kubernetes-admin", "", (MASTERS, AUTHENTICATED))
ANONYMOUS = UserInfo("system:anonymous", "", (UNAUTHENTICATED,))


def service_account_username(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Authenticator:
    """See module docstring."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self._secret = secrets.token_bytes(32)
        self._static: dict[str, UserInfo] = {}
        self._sa_tokens: dict[str, tuple[UserInfo, float, str, str, str]] = {}  # token -> (user, exp, ns, name, uid)
        self.admin_token = secrets.token_urlsafe(32)
        self.add_static_token(self.admin_token, ADMIN)

    def add_static_token(self, token: str, user: UserInfo) -> None:
        self._static[token] = user

    # ------------------------------------------------------------------ service-account tokens
    def mint_service_account_token(
        self, *, namespace: str, name: str, uid: str, audiences: list[str], expiration_seconds: int
    ) -> tuple[str, datetime.datetime]:
        now = int(self.clock())
        exp = now + expiration_seconds
        header = _b64(orjson.dumps({"alg": "HS256", "kid": "gangsched-sim", "typ": "JWT"}))
        claims = {
            "aud": audiences,
            "exp": exp,
            "iat": now,
            "nbf": now,
            "iss": ISSUER,
            "jti": secrets.token_hex(16),
            "kubernetes.io": {"namespace": namespace, "serviceaccount": {"name": name, "uid": uid}},
            "sub": service_account_username(namespace, name),
        }
        payload = _b64(orjson.dumps(claims))
        signature = _b64(hmac.new(self._secret, f"{header}.{payload}".encode(), hashlib.sha256).digest())
        token = f"{header}.{payload}.{signature}"
        return token, datetime.datetime.fromtimestamp(exp, datetime.UTC)

    def _service_account_user(self, token: str) -> UserInfo | None:
        cached = self._sa_tokens.get(token)
        if cached is None:
            parts = token.split(".")
            if len(parts) != 3:
                return None
            expected = _b64(hmac.new(self._secret, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest())
            if not hmac.compare_digest(expected, parts[2]):
                return None
            try:
                claims = orjson.loads(_unb64(parts[1]))
                ref = claims["kubernetes.io"]
                ns, name, uid = (
                    str(ref["namespace"]),
                    str(ref["serviceaccount"]["name"]),
                    str(ref["serviceaccount"]["uid"]),
                )
                exp = float(claims["exp"])
                audiences = claims["aud"]
            except (ValueError, KeyError, TypeError):
                return None
            if not isinstance(audiences, list) or not set(audiences) & set(API_AUDIENCES):
                return None  # a token for another audience does not authenticate to the API server
            user = UserInfo(
                service_account_username(ns, name),
                uid,
                ("system:serviceaccounts", f"system:serviceaccounts:{ns}", AUTHENTICATED),
                {"authentication.kubernetes.io/credential-id": (f"JTI={claims.get('jti', '')}",)},
            )
            cached = self._sa_tokens[token] = (user, exp, ns, name, uid)
        user, exp, ns, name, uid = cached
        if self.clock() >= exp:
            self._sa_tokens.pop(token, None)
            return None
        sa = self.store.get(SA_KEY, ns, name)
        if sa is None or sa.obj["metadata"].get("uid") != uid:
            return None  # the ServiceAccount was deleted (or recreated): its tokens no longer authenticate
        return user

    # ------------------------------------------------------------------ requests
    def authenticate(self, authorization: str | None, path: str) -> UserInfo | None:
        if not authorization:
            return ANONYMOUS if path in ANONYMOUS_PATHS else None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        token = token.strip()
        user = self._static.get(token)
        if user is not None:
            return user
        return self._service_account_user(token)
