"""The Python conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls
that let the conformance test run it against the other languages' clients."""

import argparse
import json
import sys

import grpc
from google.protobuf import duration_pb2

from fencekeeper.v1 import lease_pb2, store_pb2, token_pb2
from rpc import Client, Unexpected, failure_of
from scenario import run_scenario


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="conformance.py")
    parser.add_argument("command", choices=["scenario", "acquire", "put", "get", "release"])
    parser.add_argument("--server", required=True, help="the server, as http://host:port")
    parser.add_argument("--resource", required=True)
    parser.add_argument("--holder", default="python")
    parser.add_argument("--ttl", type=int, default=2, help="the lease TTL in seconds")
    parser.add_argument("--key", default="")
    parser.add_argument("--value", default="")
    parser.add_argument("--generation", type=int, default=0)
    parser.add_argument("--lease-id", type=int, default=0)
    return parser.parse_args(argv)


def single_call(client: Client, args: argparse.Namespace) -> dict:
    token = token_pb2.FencingToken(resource=args.resource, generation=args.generation, lease_id=args.lease_id)
    if args.command == "acquire":
        res = client.lease.Acquire(
            lease_pb2.AcquireRequest(resource=args.resource, ttl=duration_pb2.Duration(seconds=args.ttl), holder=args.holder)
        )
        return {"generation": str(res.token.generation), "lease_id": str(res.token.lease_id)}
    if args.command == "put":
        res = client.store.Put(
            store_pb2.PutRequest(
                resource=args.resource, key=args.key, value=args.value.encode(), mutation=store_pb2.Mutation(token=token)
            )
        )
        return {"fence": str(res.commit.fence)}
    if args.command == "get":
        res = client.store.Get(store_pb2.GetRequest(resource=args.resource, key=args.key))
        return {"found": res.found, "value": res.value.decode()}
    client.lease.Release(lease_pb2.ReleaseRequest(token=token))
    return {}


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.command == "scenario":
        try:
            run_scenario(args.server, args.resource)
        except (Unexpected, grpc.RpcError) as error:
            print(f"FAIL {error}", file=sys.stderr)
            return 1
        return 0
    client = Client(args.server)
    try:
        result = {"ok": True, **single_call(client, args)}
    except grpc.RpcError as error:
        failure = failure_of(error)
        result = {"ok": False, "code": failure.code, "reason": failure.reason}
    finally:
        client.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
