"""A fenced endpoint (docs/fenced-http.md): a service that owns its state and takes writes over HTTP refuses
a write whose fencing token is stale. The caller sends its token in the Fencing-Token header
(header_value(token): base64 of the token's protobuf); the endpoint verifies the signature offline with
the server's keys (KeyCache), checks that the token is for the resource being written, and asks the
service's own FenceStore to admit the generation: 409 with the fence when a newer generation has been
admitted. WSGIMiddleware and ASGIMiddleware wrap an application; by default they run a resource's
admitted requests one at a time in this process, from admit until the application returns, so that an
older generation admitted just before a newer one cannot finish its write after it. Verifying needs the
cryptography package (the `verify` extra)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Mapping, Protocol

from google.protobuf.message import DecodeError

from fencekeeper.token import Token
from fencekeeper.v1 import token_pb2
from fencekeeper.verify import verify_token

HEADER = "Fencing-Token"
"""The header that carries the token (WSGI: HTTP_FENCING_TOKEN; ASGI: b"fencing-token")."""
TOKEN_KEY = "fencekeeper.token"
"""Where the admitted token is: environ[TOKEN_KEY] (WSGI), scope[TOKEN_KEY] (ASGI)."""
_MAX_HEADER = 8192


def header_value(token: Token) -> str:
    """The Fencing-Token header for a token: base64 of its protobuf, signature and mode included."""
    return base64.b64encode(token.to_proto().SerializeToString()).decode()


def parse_header(value: str) -> Token:
    """Decodes a Fencing-Token header (base64 or base64url); raises ValueError saying what is wrong."""
    text = value.strip()
    if len(text) > _MAX_HEADER:
        raise ValueError(f"the {HEADER} header is {len(text)} characters, more than any token")
    try:
        alt = b"-_" if ("-" in text or "_" in text) else None
        raw = base64.b64decode(text + "=" * (-len(text) % 4), altchars=alt, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"the {HEADER} header is not base64: send fenced_http.header_value(lease.token)") from None
    p = token_pb2.FencingToken()
    try:
        p.ParseFromString(raw)
    except DecodeError as e:
        raise ValueError(f"the {HEADER} header is base64 but not a FencingToken protobuf: {e}") from None
    if not p.resource:
        raise ValueError(f"the {HEADER} header's token names no resource")
    if p.generation <= 0:
        raise ValueError(f"the {HEADER} header's token has generation {p.generation}; generations are positive")
    if p.mode not in (token_pb2.ACQUIRE_MODE_UNSPECIFIED, token_pb2.ACQUIRE_MODE_EXCLUSIVE, token_pb2.ACQUIRE_MODE_SHARED):
        raise ValueError(f"the {HEADER} header's token has mode {p.mode}, which is not an AcquireMode")
    return Token.from_proto(p)


@dataclass(frozen=True)
class Verdict:
    admitted: bool
    fence: int
    """The generation admitted, or, when refused, the newer one in force."""


class FenceStore(Protocol):
    def admit(self, resource: str, generation: int) -> Verdict:
        """Atomically for one resource: refuse a generation below its fence, otherwise raise the fence to it.
        A resource never seen admits any generation."""
        ...


class MemoryStore:
    """A FenceStore in this process's memory, for tests and single-process services only: its fences are lost
    on restart, and two processes each keep their own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fences: dict[str, int] = {}
        self.admits = 0

    def admit(self, resource: str, generation: int) -> Verdict:
        with self._lock:
            self.admits += 1
            fence = self._fences.get(resource)
            if fence is not None and fence > generation:
                return Verdict(False, fence)
            self._fences[resource] = generation
            return Verdict(True, generation)


class KeysUnavailable(Exception):
    """The token names a key not known, and the keys could not be fetched."""


class KeyCache:
    """The server's token keys, fetched on first use (fetch: usually client.token_keys) and again when a token
    names a key id not among them, at most once per min_refresh seconds however many do, so that a flood of
    forged key ids costs the server one ListTokenKeys a period. Thread-safe."""

    def __init__(self, fetch: Callable[[], Mapping[str, bytes]], min_refresh: float = 10.0):
        self._fetch = fetch
        self._min_refresh = min_refresh
        self._lock = threading.Lock()
        self._keys: Mapping[str, bytes] = {}
        self._last_fetch: float | None = None
        self._last_error: BaseException | None = None
        self.fetches = 0

    def verify(self, token: Token) -> str | None:
        """None when the signature verifies, else why not ("not signed", "unknown key id", "bad signature");
        raises KeysUnavailable when the keys are needed and cannot be had."""
        keys, _ = self._get(stale=False)
        why = verify_token(token, keys)
        if why == "unknown key id":
            keys, error = self._get(stale=True)
            why = verify_token(token, keys)
            if why == "unknown key id" and error is not None:
                raise KeysUnavailable(f"key id {token.key_id!r} unknown and the keys could not be fetched: {error}")
        return why

    def _get(self, stale: bool) -> tuple[Mapping[str, bytes], BaseException | None]:
        # The lock is held across a fetch: concurrent callers wait for it, then find it fresh.
        with self._lock:
            now = time.monotonic()
            if self._last_fetch is None or (stale and now - self._last_fetch >= self._min_refresh):
                self._last_fetch = now  # before the call: a failing fetch also waits its turn
                self.fetches += 1
                try:
                    self._keys = dict(self._fetch())
                    self._last_error = None
                except Exception as e:  # noqa: BLE001: any failure of the fetch is "keys unavailable"
                    self._last_error = e
            return self._keys, self._last_error


@dataclass(frozen=True)
class Refusal:
    """Why a write was refused: status 400 (missing or malformed header), 403 (not a genuine or usable token
    for this resource), 409 (stale), 503 (keys or store unreachable); an ErrorReason name where one fits."""

    status: int
    code: str
    message: str
    reason: str | None = None
    resource: str | None = None
    generation: int | None = None
    fence: int | None = None

    def body(self) -> bytes:
        fields: dict[str, str] = {"code": self.code, "message": self.message}
        if self.reason:
            fields["reason"] = self.reason
        if self.resource is not None:
            fields["resource"] = self.resource
        if self.generation is not None:
            fields["generation"] = str(self.generation)
        if self.fence is not None:
            fields["fence"] = str(self.fence)
        return json.dumps(fields).encode()


class FencedEndpoint:
    """The check, in two steps so that a middleware can take the resource's turn between them: verify()
    (header, signature, resource, mode; no store) then admit() (the store)."""

    def __init__(self, keys: KeyCache, store: FenceStore):
        self.keys = keys
        self.store = store

    def verify(self, header: str | None, resource: str) -> Token | Refusal:
        if not header:
            return Refusal(400, "InvalidArgument", f"a write to {resource!r} needs its fencing token in the {HEADER} header "
                           "(fenced_http.header_value(lease.token))", resource=resource)
        try:
            token = parse_header(header)
        except ValueError as e:
            return Refusal(400, "InvalidArgument", str(e), resource=resource)
        about: dict[str, Any] = {"resource": token.resource, "generation": token.generation}
        # The signature first: a token fencekeeper did not issue never reaches the store.
        try:
            why = self.keys.verify(token)
        except KeysUnavailable as e:
            return Refusal(503, "Unavailable", f"cannot check the token's signature now: {e}; try again", **about)
        if why is not None:
            return Refusal(403, "PermissionDenied", f"the fencing token's signature does not verify ({why}): send the token exactly as "
                           "Acquire returned it", reason="TOKEN_SIGNATURE_INVALID", **about)
        if token.resource != resource:
            return Refusal(403, "PermissionDenied", f"the fencing token is for {token.resource!r}, and this request writes {resource!r}: "
                           "a resource's generations say nothing about another's", **about)
        if token.shared:
            return Refusal(403, "PermissionDenied", f"a shared token (generation {token.generation} of {resource!r}) cannot write: "
                           "writes need an exclusive acquisition's token", reason="SHARED_TOKEN", **about)
        return token

    def admit(self, token: Token) -> Refusal | None:
        try:
            v = self.store.admit(token.resource, token.generation)
        except Exception as e:  # noqa: BLE001: whatever the store raised, the request may succeed later
            return Refusal(503, "Unavailable", f"the fence store did not answer: {e}; try again", resource=token.resource, generation=token.generation)
        if v.admitted:
            return None
        return Refusal(409, "FailedPrecondition", f"stale fencing token: generation {v.fence} of {token.resource!r} has written since "
                       f"generation {token.generation}; this holder has lost its lease and must stop",
                       reason="STALE_TOKEN", resource=token.resource, generation=token.generation, fence=v.fence)


class _Turns:
    """One turn at a time per resource; a resource nobody is in holds no memory. `lock` is threading.Lock or
    asyncio.Lock."""

    def __init__(self, make: Callable[[], Any]):
        self._make = make
        self._guard = threading.Lock()
        self._locks: dict[str, list[Any]] = {}  # resource -> [lock, users]

    def join(self, resource: str) -> Any:
        with self._guard:
            entry = self._locks.setdefault(resource, [self._make(), 0])
            entry[1] += 1
            return entry[0]

    def leave(self, resource: str) -> None:
        with self._guard:
            entry = self._locks[resource]
            entry[1] -= 1
            if entry[1] == 0:
                del self._locks[resource]


_STATUS_TEXT = {400: "400 Bad Request", 403: "403 Forbidden", 409: "409 Conflict", 503: "503 Service Unavailable"}


class WSGIMiddleware:
    """Wraps a WSGI application. resource_of(environ) names the resource a request writes, or None for one
    that is not fenced. A refusal is answered here as JSON (code, reason, message, resource, generation,
    fence); an admitted request reaches the application with environ[TOKEN_KEY] set."""

    def __init__(self, app: Callable[..., Iterable[bytes]], endpoint: FencedEndpoint, resource_of: Callable[[dict[str, Any]], str | None], serialize: bool = True):
        self.app, self.endpoint, self.resource_of, self.serialize = app, endpoint, resource_of, serialize
        self._turns = _Turns(threading.Lock)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        resource = self.resource_of(environ)
        if resource is None:
            return self.app(environ, start_response)
        checked = self.endpoint.verify(environ.get("HTTP_FENCING_TOKEN"), resource)
        if isinstance(checked, Refusal):
            return _refuse_wsgi(checked, start_response)
        if not self.serialize:
            refusal = self.endpoint.admit(checked)
            if refusal:
                return _refuse_wsgi(refusal, start_response)
            return self.app({**environ, TOKEN_KEY: checked}, start_response)
        lock = self._turns.join(resource)
        lock.acquire()
        try:
            refusal = self.endpoint.admit(checked)
            if refusal:
                return _refuse_wsgi(refusal, start_response)
            # The body is produced inside the turn, so that a streamed write is over before the next one.
            result = self.app({**environ, TOKEN_KEY: checked}, start_response)
            try:
                return list(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        finally:
            lock.release()
            self._turns.leave(resource)


def _refuse_wsgi(r: Refusal, start_response: Callable[..., Any]) -> list[bytes]:
    body = r.body()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    if r.status == 503:
        headers.append(("Retry-After", "1"))
    start_response(_STATUS_TEXT[r.status], headers)
    return [body]


class ASGIMiddleware:
    """Wraps an ASGI application (HTTP requests; others pass). resource_of(scope) names the resource a
    request writes, or None. A refusal is answered here as JSON; an admitted request reaches the
    application with scope[TOKEN_KEY] set. The checks, which may call the fencekeeper server and the store,
    run in a worker thread; the resource's turn is an asyncio.Lock held until the application returns."""

    def __init__(self, app: Callable[..., Awaitable[None]], endpoint: FencedEndpoint, resource_of: Callable[[dict[str, Any]], str | None], serialize: bool = True):
        self.app, self.endpoint, self.resource_of, self.serialize = app, endpoint, resource_of, serialize
        self._turns = _Turns(asyncio.Lock)

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        resource = self.resource_of(scope) if scope.get("type") == "http" else None
        if resource is None:
            return await self.app(scope, receive, send)
        values = [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"fencing-token"]
        checked = await asyncio.to_thread(self.endpoint.verify, ", ".join(values) or None, resource)
        if isinstance(checked, Refusal):
            return await _refuse_asgi(checked, send)
        lock = self._turns.join(resource) if self.serialize else None
        try:
            if lock:
                await lock.acquire()
            try:
                refusal = await asyncio.to_thread(self.endpoint.admit, checked)
                if refusal:
                    return await _refuse_asgi(refusal, send)
                await self.app({**scope, TOKEN_KEY: checked}, receive, send)
            finally:
                if lock:
                    lock.release()
        finally:
            if lock:
                self._turns.leave(resource)


async def _refuse_asgi(r: Refusal, send: Callable[..., Any]) -> None:
    body = r.body()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if r.status == 503:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": r.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
