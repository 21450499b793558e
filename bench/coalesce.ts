// Writes coalesced end to end (issue 21, targets 2 and 3): 64 concurrent fenced Puts from one process,
// each writer on a resource of its own, through
//   - the TypeScript SDK with coalescing on (its default: concurrent writes go in Batch calls),
//   - the SDK with coalescing off (one Put RPC a write),
//   - grpc-js stubs, one Put RPC a write,
//   - the hand-written etcd3 peer, one conditional txn a write (put-peers.ts),
// as ratios to the hand-written peer, with the CPU per write of this process (the client), the server
// and etcd, read from /proc around each row.
import { readFileSync, readdirSync } from "node:fs";
import { Etcd3 } from "etcd3";
import { FencekeeperClient } from "../client/index.js";
import { tokenFromProto } from "../client/token.js";
import type { FencingToken } from "../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor } from "../test/harness/clients.js";
import type { TestServer } from "../test/harness/server.js";
import { scrape } from "../test/operations/support/metrics.js";
import { GrpcStore } from "./grpc-store.js";
import { measure, type Measurement } from "./measure.js";
import { readProcess } from "./process-stats.js";
import { ByHand, initFences } from "./put-peers.js";
import { num, ratio, Table } from "./report.js";
import type { Check, Context, Flags, Scenario } from "./scenario.js";

const VALUE = Buffer.alloc(100, "v");
const WRITERS = 64;

interface Row {
  path: string;
  m: Measurement;
  /** µs of CPU per write, by process; NaN where the process is not in the path. */
  cpu: { client: number; server: number; etcd: number };
  /** Writes per store call the server saw (Put and Batch); NaN for the path without the server. */
  writesPerCall: number;
}

/** Store write calls (Put, Delete, Batch) the server has started so far. */
async function writeCalls(server: TestServer): Promise<number> {
  const s = await scrape(server);
  const of = (m: string) => s.value("grpc_server_started_total", { grpc_service: "fencekeeper.v1.FencedStoreService", grpc_method: m });
  return of("Put") + of("Delete") + of("Batch");
}

/** The pid of the etcd serving `endpoint`, found by its client port on the command line. */
function etcdPid(endpoint: string): number | undefined {
  const port = new URL(endpoint).port;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (/etcd$/.test(cmd[0]) && cmd.some((a) => a.includes(`:${port}`))) return Number(d);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

export const coalesce: Scenario = {
  name: "coalesce",
  about: "64 writers in one process: the SDK with coalescing on and off, grpc-js stubs, vs an etcd3 txn per write, with CPU per write",
  estimate: (f: Flags) => 4 * (f.seconds + 1) + 5,
  async run(ctx: Context) {
    const seconds = ctx.flags.seconds;
    const server = ctx.server();
    const pids = { client: process.pid, server: server.process.pid!, etcd: etcdPid(ctx.etcd.endpoint) };
    const connect = clientsFor(server.url);
    const names = Array.from({ length: WRITERS }, (_, w) => `bench-${ctx.runId}-coalesce-${w}`);
    const tokens: FencingToken[] = await Promise.all(
      names.map(async (resource) => (await connect.lease.acquire({ resource, ttl: { seconds: 60n, nanos: 0 }, holder: "bench" })).token!),
    );
    const sdkTokens = tokens.map(tokenFromProto);
    const etcd = new Etcd3({ hosts: ctx.etcd.endpoint });
    const prefix = `/bench-${ctx.runId}/coalesce-by-hand/`;
    await initFences(etcd, prefix, names);
    const byHand = new ByHand(etcd, prefix);
    const on = new FencekeeperClient({ servers: server.url, fenceMode: "order" });
    const off = new FencekeeperClient({ servers: server.url, fenceMode: "order", coalesceWrites: false });
    const grpc = new GrpcStore(server.url);

    const paths: [string, (w: number, i: number) => Promise<unknown>, boolean][] = [
      ["SDK, coalescing on (Batch)", (w, i) => on.store.put(sdkTokens[w], `on/${i}`, VALUE), true],
      ["SDK, coalescing off (Put)", (w, i) => off.store.put(sdkTokens[w], `off/${i}`, VALUE), true],
      ["grpc-js stubs, Put", (w, i) => grpc.put({ resource: names[w], key: `grpc/${i}`, value: VALUE, mutation: { token: tokens[w] } }), true],
      ["etcd3 txn by hand", (w, i) => byHand.write({ resource: names[w], generation: tokens[w].generation, key: `hand/${i}`, value: VALUE }), false],
    ];
    const rows: Row[] = [];
    const table = new Table(`coalesced writes: ${WRITERS} writers in one process, one resource each; writes/s and µs of CPU per write, ${seconds} s per row`, [
      { title: "path", width: 28, left: true },
      { title: "writes/s", width: 9 },
      { title: "p99 ms", width: 7 },
      { title: "x by hand", width: 9 },
      { title: "client", width: 7 },
      { title: "server", width: 7 },
      { title: "etcd", width: 7 },
      { title: "writes/call", width: 11 },
    ]);
    try {
      for (const [path, op, usesServer] of paths) {
        ctx.progress(`coalesce: ${path}`);
        // One warm-up round outside the readings.
        await Promise.all(Array.from({ length: WRITERS }, (_, w) => op(w, -1).catch(() => undefined)));
        const callsBefore = usesServer ? await writeCalls(server) : 0;
        const before = { client: readProcess(pids.client), server: readProcess(pids.server), etcd: pids.etcd ? readProcess(pids.etcd) : undefined };
        const m = await measure({ workers: WRITERS, seconds, op, warmUp: false });
        const after = { client: readProcess(pids.client), server: readProcess(pids.server), etcd: pids.etcd ? readProcess(pids.etcd) : undefined };
        const perOp = (k: keyof typeof before) => {
          const a = after[k];
          const b = before[k];
          return a && b && m.ops > 0 ? ((a.cpuSeconds - b.cpuSeconds) * 1e6) / m.ops : NaN;
        };
        // Calls started in the window; the writes answered in it are within a batch of that count.
        const calls = usesServer ? (await writeCalls(server)) - callsBefore : NaN;
        rows.push({ path, m, cpu: { client: perOp("client"), server: usesServer ? perOp("server") : NaN, etcd: perOp("etcd") }, writesPerCall: m.ops / calls });
      }
      const hand = rows[rows.length - 1].m.perSecond;
      for (const r of rows) {
        table.row([
          r.path + (r.m.errors || r.m.stuck ? ` (${r.m.errors} errors)` : ""),
          num(r.m.perSecond),
          r.m.p99Ms.toFixed(2),
          ratio(r.m.perSecond / hand),
          num(r.cpu.client),
          num(r.cpu.server),
          num(r.cpu.etcd),
          Number.isFinite(r.writesPerCall) ? r.writesPerCall.toFixed(1) : "-",
        ]);
      }
      table.note("client: this process (the SDK, grpc-js or etcd3 client); CPU read from /proc before and after each row.");
      const sdkOn = rows[0].m.perSecond / hand;
      const oneRpc = Math.min(rows[1].m.perSecond, rows[2].m.perSecond) / hand;
      const checks: Check[] = [
        {
          target: "21.3 The SDK, 64 concurrent writes from one process: >= 3x the hand-written txn per write",
          status: sdkOn >= 3 && rows[0].m.errors === 0 ? "met" : "not met",
          detail: `${ratio(sdkOn)} (${num(rows[0].m.perSecond)} vs ${num(hand)} writes/s); server ${num(rows[0].cpu.server)} µs CPU per write`,
        },
        {
          target: "21.2 One RPC per write (grpc-js, SDK with coalescing off), 64 writers: >= 1x the hand-written txn per write",
          status: oneRpc >= 1 ? "met" : "not met",
          detail: `${ratio(rows[1].m.perSecond / hand)} SDK off, ${ratio(rows[2].m.perSecond / hand)} grpc-js`,
        },
      ];
      return { json: { seconds, writers: WRITERS, rows }, checks };
    } finally {
      await Promise.all([on.close(), off.close()]);
      grpc.close();
      etcd.close();
    }
  },
};
