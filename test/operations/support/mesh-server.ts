// A server for the mesh tests: metrics on a free port, a fast etcd probe and short etcd deadlines, so
// that health follows etcd within a second or two.
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { startServer, type ServerOptions, type TestServer } from "../../harness/server.js";
import { Health } from "../../../gen/ts-grpc/grpc/health/v1/health_pb.js";

export const FAST_HEALTH = ["--metrics-listen", "127.0.0.1:0", "--health-probe-interval", "200", "--etcd-timeout", "1000"];

export function startMeshServer(o: ServerOptions): Promise<TestServer> {
  return startServer({ ...o, args: [...FAST_HEALTH, ...(o.args ?? [])] });
}

export function healthClient(url: string): Client<typeof Health> {
  return createClient(Health, createGrpcTransport({ baseUrl: url }));
}
