// Writes coalesced end to end (issue 21, targets 2 and 3): 64 concurrent fenced Puts from one process,
// each writer on a resource of its own, through
//   - the TypeScript SDK with coalescing on (its default: concurrent writes go in Batch calls),
//   - the SDK with coalescing off (one Put RPC a write), its unary calls through grpc-js (its default) and
//     through connect-node (transport: "connect"), the row that shows what the grpc-js transport buys,
//   - grpc-js stubs, one Put RPC a write,
//   - the bare relay (relay-server.ts): a connect-node server with no fencekeeper code that forwards the
//     hand-written txn, through grpc-js,
//   - the hand-written etcd3 peer, one conditional txn a write (put-peers.ts),
// and the same with one writer (issue 21, target 1: the server's CPU at one caller), and GetFence beside
// a direct etcd get at one caller, as ratios to the hand-written peer, with the CPU per write of this process (the client), the server
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
import { startRelay } from "./relay.js";
import { ByHand, initFences } from "./put-peers.js";
import { num, ratio, Table } from "./report.js";
import type { Check, Context, Flags, Scenario } from "./scenario.js";

const VALUE = Buffer.alloc(100, "v");
const WRITERS = 64;

interface Row {
  path: string;
  writers: number;
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
export function etcdPid(endpoint: string): number | undefined {
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
  about: "64 writers (and one) in one process: the SDK with coalescing on and off, grpc-js stubs, a bare relay, vs an etcd3 txn per write, with CPU per write",
  estimate: (f: Flags) => 13 * (f.seconds + 1) + 6,
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
    // The SDK's unary calls through connect-node rather than grpc-js (its default: grpc-js-transport.ts).
    const viaConnect = new FencekeeperClient({ servers: server.url, fenceMode: "order", coalesceWrites: false, transport: "connect" });
    const grpc = new GrpcStore(server.url);

    const relay = await startRelay(ctx.etcd.endpoint, `/bench-${ctx.runId}/coalesce-relay/`);
    await initFences(etcd, relay.prefix, names);
    const grpcPut = (w: number, i: number) => grpc.put({ resource: names[w], key: `grpc/${i}`, value: VALUE, mutation: { token: tokens[w] } });
    const relayPut = (w: number, i: number) => relay.store.put({ resource: names[w], key: `relay/${i}`, value: VALUE, mutation: { token: tokens[w] } });
    const handPut = (w: number, i: number) => byHand.write({ resource: names[w], generation: tokens[w].generation, key: `hand/${i}`, value: VALUE });
    // [path, writers, op, the server process it goes through (if any)]
    const paths: [string, number, (w: number, i: number) => Promise<unknown>, "server" | "relay" | undefined][] = [
      ["SDK, coalescing on (Batch)", WRITERS, (w, i) => on.store.put(sdkTokens[w], `on/${i}`, VALUE), "server"],
      ["SDK, coalescing off (Put)", WRITERS, (w, i) => off.store.put(sdkTokens[w], `off/${i}`, VALUE), "server"],
      ["SDK, off, connect-node calls", WRITERS, (w, i) => viaConnect.store.put(sdkTokens[w], `cn/${i}`, VALUE), "server"],
      ["grpc-js stubs, Put", WRITERS, grpcPut, "server"],
      ["bare relay, grpc-js", WRITERS, relayPut, "relay"],
      ["etcd3 txn by hand", WRITERS, handPut, undefined],
      ["SDK, one writer", 1, (w, i) => on.store.put(sdkTokens[w], `one/${i}`, VALUE), "server"],
      ["SDK, one writer, connect-node", 1, (w, i) => viaConnect.store.put(sdkTokens[w], `cn1/${i}`, VALUE), "server"],
      ["grpc-js stubs, one writer", 1, grpcPut, "server"],
      ["bare relay, one writer", 1, relayPut, "relay"],
      ["etcd3 by hand, one writer", 1, handPut, undefined],
      // A read: GetFence is one etcd read (the fence and the issued generation, one snapshot).
      ["GetFence, grpc-js, one caller", 1, (w) => grpc.getFence(names[w]), "server"],
      ["etcd3 get, one caller", 1, (w) => etcd.get(`${prefix}${names[w]}/fence`).buffer(), undefined],
    ];
    const rows: Row[] = [];
    const table = new Table(`coalesced writes: ${WRITERS} writers (and one) in one process, one resource each; writes/s and µs of CPU per write, ${seconds} s per row`, [
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
      for (const [path, writers, op, via] of paths) {
        ctx.progress(`coalesce: ${path}`);
        const serverPid = via === "server" ? pids.server : via === "relay" ? relay.pid : undefined;
        // One warm-up round outside the readings.
        await Promise.all(Array.from({ length: writers }, (_, w) => op(w, -1).catch(() => undefined)));
        const callsBefore = via === "server" ? await writeCalls(server) : 0;
        const read = () => ({ client: readProcess(pids.client), server: serverPid ? readProcess(serverPid) : undefined, etcd: pids.etcd ? readProcess(pids.etcd) : undefined });
        const before = read();
        const m = await measure({ workers: writers, seconds, op, warmUp: false });
        const after = read();
        const perOp = (k: keyof typeof before) => {
          const a = after[k];
          const b = before[k];
          return a && b && m.ops > 0 ? ((a.cpuSeconds - b.cpuSeconds) * 1e6) / m.ops : NaN;
        };
        // Calls started in the window; the writes answered in it are within a batch of that count.
        const calls = via === "server" ? (await writeCalls(server)) - callsBefore : NaN;
        rows.push({ path, writers, m, cpu: { client: perOp("client"), server: perOp("server"), etcd: perOp("etcd") }, writesPerCall: m.ops / calls });
      }
      const row = (path: string) => rows.find((r) => r.path === path)!;
      const handAt = (writers: number) => rows.find((r) => r.writers === writers && r.path.startsWith("etcd3"))!.m.perSecond;
      const peerOf = (r: Row) => (r.path.startsWith("GetFence") || r.path.startsWith("etcd3 get") ? row("etcd3 get, one caller").m.perSecond : handAt(r.writers));
      const hand = handAt(WRITERS);
      for (const r of rows) {
        table.row([
          r.path + (r.m.errors || r.m.stuck ? ` (${r.m.errors} errors)` : ""),
          num(r.m.perSecond),
          r.m.p99Ms.toFixed(2),
          ratio(r.m.perSecond / peerOf(r)),
          num(r.cpu.client),
          num(r.cpu.server),
          num(r.cpu.etcd),
          Number.isFinite(r.writesPerCall) ? r.writesPerCall.toFixed(1) : "-",
        ]);
      }
      table.note("client: this process (the SDK, grpc-js or etcd3 client); server: fencekeeper's, or the bare relay's (relay-server.ts); CPU read from /proc before and after each row.");
      const sdkOn = rows[0].m.perSecond / hand;
      const sdkOff = row("SDK, coalescing off (Put)").m.perSecond;
      const stubs = row("grpc-js stubs, Put").m.perSecond;
      const oneRpc = Math.min(sdkOff, stubs) / hand;
      const cpuOne = row("grpc-js stubs, one writer").cpu.server;
      const cpu64 = row("grpc-js stubs, Put").cpu.server;
      const cpuBatched = rows[0].cpu.server;
      const checks: Check[] = [
        {
          target: "21.3 The SDK, 64 concurrent writes from one process: >= 3x the hand-written txn per write",
          status: sdkOn >= 3 && rows[0].m.errors === 0 ? "met" : "not met",
          detail: `${ratio(sdkOn)} (${num(rows[0].m.perSecond)} vs ${num(hand)} writes/s); server ${num(rows[0].cpu.server)} µs CPU per write`,
        },
        {
          target: "21.2 One RPC per write (grpc-js, SDK with coalescing off), 64 writers: >= 1x the hand-written txn per write",
          status: oneRpc >= 1 ? "met" : "not met",
          detail: `${ratio(sdkOff / hand)} SDK off, ${ratio(stubs / hand)} grpc-js stubs`,
        },
        {
          target: "21.1 Server CPU per fenced Put: <= 90 µs at 64 callers one RPC each, <= 30 µs coalesced, <= 300 µs at one caller",
          status: cpu64 <= 90 && cpuBatched <= 30 && cpuOne <= 300 ? "met" : "not met",
          detail: `${num(cpu64)} µs at 64 (grpc-js), ${num(cpuBatched)} µs coalesced, ${num(cpuOne)} µs at one caller; the bare relay: ${num(row("bare relay, grpc-js").cpu.server)} and ${num(row("bare relay, one writer").cpu.server)} µs`,
        },
      ];
      return { json: { seconds, writers: WRITERS, rows }, checks };
    } finally {
      await Promise.all([on.close(), off.close(), viaConnect.close()]);
      grpc.close();
      await relay.stop();
      etcd.close();
    }
  },
};
