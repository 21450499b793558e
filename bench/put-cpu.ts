// The server's CPU per fenced Put, from /proc around each row: grpc-js stubs, one Put RPC a write, at 1
// and at 64 callers, each row run twice in turn (the machine's neighbours move single rows). A quick
// check that a change to the call path does not make each call dearer; `npm run bench -- --only
// coalesce` gives the same figure beside the SDK's and etcd's.
//   node --import tsx bench/put-cpu.ts [--seconds S] [--callers 1,64] [--unary-fast-path on|off] [--profile DIR]
// --profile: the server writes a CPU profile into DIR when it exits (as node --cpu-prof).
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startEtcd } from "../test/harness/etcd.js";
import { startServer } from "../test/harness/server.js";
import { clientsFor } from "../test/harness/clients.js";
import { GrpcStore } from "./grpc-store.js";
import { measure } from "./measure.js";
import { readProcess } from "./process-stats.js";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "5" }, callers: { type: "string", default: "1,64" }, "unary-fast-path": { type: "string", default: "on" }, profile: { type: "string" } } });
const seconds = Number(values.seconds);
const rows = values.callers.split(",").map(Number);
const VALUE = Buffer.alloc(100, "v");
const PROFILER = fileURLToPath(new URL("./cpu-profile.mjs", import.meta.url));

const etcd = await startEtcd();
const server = await startServer({
  etcd: etcd.endpoint,
  args: ["--log-level", "info", "--unary-fast-path", values["unary-fast-path"]],
  env: values.profile ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${PROFILER}`.trim(), FENCEKEEPER_BENCH_PROFILE_DIR: values.profile } : {},
});
try {
  const connect = clientsFor(server.url);
  const names = Array.from({ length: 64 }, (_, w) => `put-cpu-${process.pid}-${w}`);
  const tokens = await Promise.all(names.map(async (resource) => (await connect.lease.acquire({ resource, ttl: { seconds: 120n, nanos: 0 }, holder: "bench" })).token!));
  const grpc = new GrpcStore(server.url);
  const pid = server.process.pid!;
  for (const round of [1, 2]) {
    for (const callers of rows) {
      const op = (w: number, i: number) => grpc.put({ resource: names[w], key: `r${round}/${i}`, value: VALUE, mutation: { token: tokens[w] } });
      await measure({ workers: callers, seconds: 1, op });
      const before = readProcess(pid)!;
      const m = await measure({ workers: callers, seconds, op, warmUp: false });
      const after = readProcess(pid)!;
      const us = ((after.cpuSeconds - before.cpuSeconds) * 1e6) / m.ops;
      console.log(`round ${round}, ${String(callers).padStart(2)} callers: ${Math.round(m.perSecond)} puts/s, p50 ${m.p50Ms.toFixed(2)} ms, server ${Math.round(us)} µs CPU per put${m.errors ? `, ${m.errors} errors (${m.firstError})` : ""}`);
    }
  }
  grpc.close();
} finally {
  await server.stop();
  await etcd.destroy();
}
