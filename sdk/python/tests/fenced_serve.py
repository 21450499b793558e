"""A service that owns its items, fenced with fencekeeper.fenced_http, for test/fenced-http/python.test.ts:

    fenced_serve.py wsgi|asgi --server URL

serves on a loopback port of its own and prints {"http": URL} as one line, then runs until stdin ends.
PUT /items/<resource> writes the body as the resource's item behind the middleware (a body "slow..."
takes 400 ms); GET /items/<resource>
answers {"value", "generation"}; GET /admits answers how many times the fence store was asked. wsgi: the
standard library's wsgiref server, one thread a request. asgi: the smallest HTTP/1.1 server on asyncio
that runs an ASGI application (one request a connection), since the standard library has no ASGI server."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import unquote
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from fencekeeper import Client
from fencekeeper.fenced_http import TOKEN_KEY, ASGIMiddleware, FencedEndpoint, KeyCache, MemoryStore, WSGIMiddleware

items: dict[str, dict[str, str]] = {}
lock = threading.Lock()


def route(method: str, path: str, token: Any, body: bytes, store: MemoryStore) -> tuple[int, bytes]:
    if method == "PUT" and path.startswith("/items/"):
        with lock:
            items[token.resource] = {"value": body.decode(), "generation": str(token.generation)}
        return 200, json.dumps({"written": body.decode()}).encode()
    if method == "GET" and path.startswith("/items/"):
        with lock:
            item = items.get(unquote(path[len("/items/"):]))
        return (200, json.dumps(item).encode()) if item else (404, b"{}")
    if method == "GET" and path == "/admits":
        return 200, json.dumps({"admits": store.admits}).encode()
    return 404, b"{}"


def resource_of(method: str, path: str) -> str | None:
    return unquote(path[len("/items/"):]) if method == "PUT" and path.startswith("/items/") else None


def wsgi(endpoint: FencedEndpoint, store: MemoryStore) -> str:
    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        if body.startswith(b"slow"):
            time.sleep(0.4)
        status, out = route(environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get(TOKEN_KEY), body, store)
        start_response(f"{status} {'OK' if status == 200 else 'Not Found'}", [("Content-Type", "application/json")])
        return [out]

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    class Threaded(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    fenced = WSGIMiddleware(app, endpoint, lambda env: resource_of(env["REQUEST_METHOD"], env["PATH_INFO"]))
    server = make_server("127.0.0.1", 0, fenced, server_class=Threaded, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}"


async def asgi(endpoint: FencedEndpoint, store: MemoryStore) -> str:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if body.startswith(b"slow"):
            await asyncio.sleep(0.4)  # not time.sleep: the loop must go on serving the other requests
        status, out = route(scope["method"], scope["path"], scope.get(TOKEN_KEY), body, store)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": out})

    fenced = ASGIMiddleware(app, endpoint, lambda scope: resource_of(scope["method"], scope["path"]))

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target, _ = head[0].split(" ", 2)
        headers = [tuple(h.split(":", 1)) for h in head[1:] if h]
        headers = [(k.strip().lower().encode("latin-1"), v.strip().encode("latin-1")) for k, v in headers]
        length = int(next((v for k, v in headers if k == b"content-length"), b"0"))
        body = await reader.readexactly(length) if length else b""
        path = target.split("?", 1)[0]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": unquote(path),
                 "raw_path": path.encode(), "query_string": b"", "headers": headers}
        sent: list[bool] = [False]

        async def receive() -> dict[str, Any]:
            if sent[0]:
                return {"type": "http.disconnect"}
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                writer.write(f"HTTP/1.1 {message['status']} X\r\nconnection: close\r\n".encode())
                for k, v in message.get("headers", []):
                    writer.write(k + b": " + v + b"\r\n")
                writer.write(b"\r\n")
            elif message["type"] == "http.response.body":
                writer.write(message.get("body", b""))

        await fenced(scope, receive, send)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["wsgi", "asgi"])
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    client = Client(args.server)
    store = MemoryStore()
    endpoint = FencedEndpoint(KeyCache(client.token_keys, min_refresh=60), store)
    if args.kind == "wsgi":
        print(json.dumps({"http": wsgi(endpoint, store)}), flush=True)
        sys.stdin.read()
    else:
        async def run() -> None:
            print(json.dumps({"http": await asgi(endpoint, store)}), flush=True)
            await asyncio.to_thread(sys.stdin.read)

        asyncio.run(run())
    client.close()


if __name__ == "__main__":
    main()
