"""The Python conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls
that let the conformance test run it against the other languages' clients.
calls runs many single calls in one process, one JSON line in and one out each: one start a test, not a call."""

import argparse
import base64
import binascii
import contextlib
import io
import json
import sys
import traceback
from typing import BinaryIO, TextIO

import grpc
from google.protobuf import duration_pb2

from fencekeeper.v1 import lease_pb2, store_pb2, token_pb2
from rpc import Auth, Client, Unexpected, failure_of
from scenario import run_scenario
from verify import verify_token

COMMANDS = ["scenario", "acquire", "put", "get", "release", "keys", "verify", "calls"]

CALLS_HELP = """calls: many single calls in one process (no other arguments): a line on stdin is one call's
arguments as a JSON array, e.g. ["keys","--server","http://h:p"]; the answer, a line on stdout:
{"exit":N,"stdout":"...","stderr":"..."}, as the call alone gives"""


def parse(argv: list[str], alone: bool = True) -> argparse.Namespace:
    """The arguments of one call; alone: the call is the process's own, not one of calls."""
    parser = argparse.ArgumentParser(
        prog="conformance.py", epilog=CALLS_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=COMMANDS)
    parser.add_argument("--server", help="the server, as http://host:port or https://host:port")
    parser.add_argument("--resource")
    parser.add_argument("--holder", default="python")
    parser.add_argument("--ttl", type=int, default=2, help="the lease TTL in seconds")
    parser.add_argument("--key", default="")
    parser.add_argument("--value", default="")
    parser.add_argument("--generation", type=int, default=0)
    parser.add_argument("--lease-id", type=int, default=0)
    parser.add_argument("--principal", default="")
    parser.add_argument("--key-id", default="")
    parser.add_argument("--signature", default="", help="the token's signature, base64")
    parser.add_argument("--token-json", help="verify: the token, a JSON file")
    parser.add_argument("--keys-json", help="verify: the keys, a JSON file")
    parser.add_argument("--bearer", default="", help="a JWT, sent as authorization: Bearer")
    parser.add_argument("--tls-ca", default="", help="PEM CA of the server's certificate")
    parser.add_argument("--tls-cert", default="", help="PEM client certificate")
    parser.add_argument("--tls-key", default="", help="PEM key of --tls-cert")
    args = parser.parse_args(argv)
    if not alone and args.command in ("scenario", "calls"):
        parser.error(f"{args.command} runs only as its own process")
    if args.command == "calls":
        parser.error("calls takes no other arguments")
    if args.command == "verify":
        if not args.token_json or not args.keys_json:
            parser.error("verify needs --token-json FILE and --keys-json FILE")
    elif not args.server or (args.command != "keys" and not args.resource):
        parser.error(f"{args.command} needs --server" + ("" if args.command == "keys" else " and --resource"))
    try:
        args.signature = base64.b64decode(args.signature, validate=True)
    except binascii.Error:
        parser.error("--signature is not base64")
    return args


def token_json(t: token_pb2.FencingToken) -> dict:
    """A token as the single calls print it: 64-bit integers as decimal strings, the signature in base64."""
    return {
        "resource": t.resource,
        "generation": str(t.generation),
        "lease_id": str(t.lease_id),
        "principal": t.principal,
        "key_id": t.key_id,
        "signature": base64.b64encode(t.signature).decode(),
    }


def single_call(client: Client, args: argparse.Namespace) -> dict | list:
    token = token_pb2.FencingToken(
        resource=args.resource,
        generation=args.generation,
        lease_id=args.lease_id,
        principal=args.principal,
        key_id=args.key_id,
        signature=args.signature,
    )
    if args.command == "acquire":
        res = client.lease.Acquire(
            lease_pb2.AcquireRequest(resource=args.resource, ttl=duration_pb2.Duration(seconds=args.ttl), holder=args.holder)
        )
        return {"ok": True, **token_json(res.token)}
    if args.command == "put":
        res = client.store.Put(
            store_pb2.PutRequest(
                resource=args.resource, key=args.key, value=args.value.encode(), mutation=store_pb2.Mutation(token=token)
            )
        )
        return {"ok": True, "fence": str(res.commit.fence)}
    if args.command == "get":
        res = client.store.Get(store_pb2.GetRequest(resource=args.resource, key=args.key))
        return {"ok": True, "found": res.found, "value": res.value.decode()}
    if args.command == "keys":
        # The keys alone, as verify --keys-json reads them.
        res = client.lease.ListTokenKeys(lease_pb2.ListTokenKeysRequest())
        return [
            {"key_id": k.key_id, "algorithm": k.algorithm, "public_key": base64.b64encode(k.public_key).decode()}
            for k in res.keys
        ]
    client.lease.Release(lease_pb2.ReleaseRequest(token=token))
    return {"ok": True}


def verify_files(token_file: str, keys_file: str) -> dict:
    """Verifies the token of one JSON file with the keys of another."""
    with open(token_file) as f:
        t = json.load(f)
    with open(keys_file) as f:
        listed = json.load(f)
    token = token_pb2.FencingToken(
        resource=t.get("resource", ""),
        generation=int(t.get("generation", "0")),
        lease_id=int(t.get("lease_id", "0")),
        principal=t.get("principal", ""),
        key_id=t.get("key_id", ""),
        signature=base64.b64decode(t.get("signature", "")),
        mode=int(t.get("mode", "0")),
    )
    keys = {
        k["key_id"]: base64.b64decode(k["public_key"]) for k in listed if k.get("algorithm", "Ed25519") == "Ed25519"
    }
    reason = verify_token(token, keys)
    return {"ok": True} if reason is None else {"ok": False, "reason": reason}


def run_call(argv: list[str], out: TextIO, err: TextIO, alone: bool = True) -> int:
    """Runs one call of argv (the arguments after the program) as the process would, writing to out and
    err, and returns the exit code; alone: the call is the process's own, not one of calls."""
    # argparse writes its usage and errors to sys.stdout and sys.stderr, and exits.
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            return call(argv, out, err, alone)
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                return stop.code or 0
            print(stop.code, file=err)
            return 1
        except Exception:
            traceback.print_exc(file=err)
            return 1


def call(argv: list[str], out: TextIO, err: TextIO, alone: bool) -> int:
    args = parse(argv, alone)
    if args.command == "verify":
        print(json.dumps(verify_files(args.token_json, args.keys_json)), file=out)
        return 0
    auth = Auth(bearer=args.bearer, ca=args.tls_ca, cert=args.tls_cert, key=args.tls_key)
    if args.command == "scenario":
        # The scenario prints its steps on the process's stdout: it runs only as its own process.
        try:
            run_scenario(args.server, args.resource, auth)
        except (Unexpected, grpc.RpcError) as error:
            print(f"FAIL {error}", file=err)
            return 1
        return 0
    client = Client(args.server, auth)
    try:
        result = single_call(client, args)
    except grpc.RpcError as error:
        failure = failure_of(error)
        result = {"ok": False, "code": failure.code, "reason": failure.reason}
    finally:
        client.close()
    print(json.dumps(result), file=out)
    return 0


def run_calls(lines: BinaryIO, out: TextIO) -> int:
    """Runs the calls of lines, one JSON array of arguments a line, one after another, and writes each
    one's answer to out as a line of its own once the call is over. Each call opens its own channel with
    the credentials of its line, and closes it when it ends."""
    for line in lines:
        try:
            argv = json.loads(line)
        except ValueError:
            argv = None
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            text = line.rstrip(b"\r\n").decode(errors="replace")
            why = f"calls: a line must be a JSON array of strings, got {text!r}\n"
            answer = {"exit": 2, "stdout": "", "stderr": why}
        else:
            stdout, stderr = io.StringIO(), io.StringIO()
            code = run_call(argv, stdout, stderr, alone=False)
            answer = {"exit": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
        out.write(json.dumps(answer) + "\n")
        out.flush()
    return 0


def main(argv: list[str]) -> int:
    if argv == ["calls"]:
        return run_calls(sys.stdin.buffer, sys.stdout)
    return run_call(argv, sys.stdout, sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
