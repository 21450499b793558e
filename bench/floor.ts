// The floor of a unary call (issue 39, item 6): a null grpc-js server and node:http2 alone answering
// FencedStoreService.Put at once (null-server.ts, each its own process, no etcd), beside fencekeeper's
// Put, Acquire and Release, at 64 callers and at one, all through the same grpc-js client, with the CPU
// per call of each process (the server, etcd, and this process as the client) read from /proc.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { build } from "esbuild";
import {
  AcquireRequestSchema,
  AcquireResponseSchema,
  LeaseService,
  ReleaseRequestSchema,
  ReleaseResponseSchema,
} from "../gen/ts/fencekeeper/v1/lease_pb.js";
import type { FencingToken } from "../gen/ts/fencekeeper/v1/token_pb.js";
import { etcdPid } from "./coalesce.js";
import { GrpcStore } from "./grpc-store.js";
import { measure, summarize, type Measurement } from "./measure.js";
import { readProcess } from "./process-stats.js";
import { num, Table } from "./report.js";
import type { Check, Context, Flags, Scenario } from "./scenario.js";

const CALLERS = [64, 1];
const VALUE = Buffer.alloc(100, "v");
const SOURCE = fileURLToPath(new URL("./null-server.ts", import.meta.url));
/** Beside the sources, so that its imports resolve in node_modules; bench/results/ is not versioned. */
const COMPILED = fileURLToPath(new URL("./results/null-server.mjs", import.meta.url));

interface NullServer {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** A null server as a process of its own, compiled first as fencekeeper's server runs compiled. */
async function startNull(kind: "grpc-js" | "http2"): Promise<NullServer> {
  const child = spawn(process.execPath, [COMPILED, "--kind", kind], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the null ${kind} server did not start within 20 s`)), 20_000);
    child.once("exit", (code) => reject(new Error(`the null ${kind} server exited (${code}) before it listened`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const m = /^listening (\d+)$/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await once(child, "exit");
      }
    },
  };
}

/** LeaseService's Acquire and Release through grpc-js, as GrpcStore does the store's Put. */
class GrpcLease {
  readonly #client: grpc.Client;
  constructor(url: string) {
    this.#client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
  }
  #unary<I extends DescMessage, O extends DescMessage>(method: string, input: I, output: O, req: MessageInitShape<I>): Promise<MessageShape<O>> {
    return new Promise((resolve, reject) =>
      this.#client.makeUnaryRequest(
        `/${LeaseService.typeName}/${method}`,
        (r: MessageInitShape<I>) => Buffer.from(toBinary(input, create(input, r))),
        (b: Buffer) => fromBinary(output, b),
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + 30_000 },
        (err, res) => (err ? reject(err) : resolve(res!)),
      ),
    );
  }
  acquire(resource: string) {
    return this.#unary(LeaseService.method.acquire.name, AcquireRequestSchema, AcquireResponseSchema, { resource, ttl: { seconds: 60n, nanos: 0 }, holder: "bench-floor" });
  }
  release(token: FencingToken) {
    return this.#unary(LeaseService.method.release.name, ReleaseRequestSchema, ReleaseResponseSchema, { token });
  }
  close() {
    this.#client.close();
  }
}

/** Releases every token, `callers` at a time: the calls/s and latency of Release alone. */
async function releaseAll(lease: GrpcLease, tokens: FencingToken[], callers: number): Promise<Measurement> {
  const queue = [...tokens];
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let token = queue.pop(); token; token = queue.pop()) {
        const t = performance.now();
        try {
          await lease.release(token);
          latencies.push(performance.now() - t);
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  return summarize(callers, { latencies, ops: latencies.length, errors, firstError, stuck: 0, seconds: (performance.now() - started) / 1000 });
}

interface Row {
  path: string;
  callers: number;
  m: Measurement;
  /** µs of CPU per call. */
  cpu: { server: number; etcd: number; client: number };
}

export const floor: Scenario = {
  name: "floor",
  about: "a null grpc-js server and node:http2 alone answering a unary call, beside fencekeeper's Put, Acquire and Release, CPU per call, at 64 callers and one",
  estimate: (f: Flags) => CALLERS.length * 5 * (f.seconds + 1) + 5,
  async run(ctx: Context) {
    const seconds = ctx.flags.seconds;
    await build({ entryPoints: [SOURCE], bundle: true, packages: "external", platform: "node", format: "esm", target: "node20", outfile: COMPILED, logLevel: "warning" });
    const nullGrpc = await startNull("grpc-js");
    const nullHttp2 = await startNull("http2");
    const server = ctx.server();
    const etcd = etcdPid(ctx.etcd.endpoint);
    const toNullGrpc = new GrpcStore(nullGrpc.url);
    const toNullHttp2 = new GrpcStore(nullHttp2.url);
    const store = new GrpcStore(server.url);
    const lease = new GrpcLease(server.url);
    const rows: Row[] = [];
    const table = new Table(`the floor of a unary call, one grpc-js client: calls/s, p50 ms, µs of CPU per call of each process, ${seconds} s per row`, [
      { title: "path", width: 34, left: true },
      { title: "callers", width: 7 },
      { title: "calls/s", width: 8 },
      { title: "p50 ms", width: 7 },
      { title: "server", width: 7 },
      { title: "etcd", width: 6 },
      { title: "client", width: 7 },
      { title: "server x null grpc-js", width: 21 },
    ]);
    const row = async (path: string, callers: number, serverPid: number, withEtcd: boolean, run: () => Promise<Measurement>) => {
      ctx.progress(`floor: ${path}, ${callers} caller(s)`);
      const read = () => ({ server: readProcess(serverPid), etcd: withEtcd && etcd ? readProcess(etcd) : undefined, client: readProcess(process.pid) });
      const before = read();
      const m = await run();
      const after = read();
      const per = (k: "server" | "etcd" | "client") => {
        const a = after[k];
        const b = before[k];
        return a && b && m.ops > 0 ? ((a.cpuSeconds - b.cpuSeconds) * 1e6) / m.ops : NaN;
      };
      const r: Row = { path, callers, m, cpu: { server: per("server"), etcd: per("etcd"), client: per("client") } };
      rows.push(r);
      const floorRow = rows.find((x) => x.callers === callers && x.path === "null grpc-js server, Put");
      table.row([
        path + (m.errors || m.stuck ? ` (${m.errors} errors; ${m.firstError})` : ""),
        String(callers),
        num(m.perSecond),
        m.p50Ms.toFixed(2),
        num(r.cpu.server),
        num(r.cpu.etcd),
        num(r.cpu.client),
        floorRow ? `${(r.cpu.server / floorRow.cpu.server).toFixed(2)}x` : "-",
      ]);
    };
    try {
      const tokens = await Promise.all(Array.from({ length: 64 }, async (_, w) => (await lease.acquire(`floor-${ctx.runId}-put-${w}`)).token!));
      for (const callers of CALLERS) {
        const put = (to: GrpcStore) => (w: number, i: number) => to.put({ resource: `floor-${w}`, key: `k${i}`, value: VALUE });
        await row("null grpc-js server, Put", callers, nullGrpc.pid, false, () => measure({ workers: callers, seconds, op: put(toNullGrpc) }));
        await row("node:http2 alone, Put", callers, nullHttp2.pid, false, () => measure({ workers: callers, seconds, op: put(toNullHttp2) }));
        await row("fencekeeper, fenced Put", callers, server.process.pid!, true, () =>
          measure({ workers: callers, seconds, op: (w, i) => store.put({ resource: tokens[w].resource, key: `floor/${callers}/${i}`, value: VALUE, mutation: { token: tokens[w] } }) }),
        );
        // Acquire of a free resource each call (no contention), then the Release of every lease taken.
        const taken: FencingToken[] = [];
        await row("fencekeeper, Acquire", callers, server.process.pid!, true, () =>
          measure({
            workers: callers,
            seconds,
            warmUp: false,
            op: async (w, i) => taken.push((await lease.acquire(`floor-${ctx.runId}-${callers}-${w}-${i}`)).token!),
          }),
        );
        await row("fencekeeper, Release", callers, server.process.pid!, true, () => releaseAll(lease, taken, callers));
      }
      table.note("server: the null server's or fencekeeper's process; etcd: fencekeeper's etcd; client: this process. CPU read from /proc before and after each row.");
      const ratios = rows
        .filter((r) => r.path.startsWith("fencekeeper"))
        .map((r) => ({ r, x: r.cpu.server / rows.find((f) => f.callers === r.callers && f.path === "null grpc-js server, Put")!.cpu.server }));
      const checks: Check[] = [
        {
          target: "39.4 Server CPU per unary call (Put, Acquire, Release) at most 1.5x a null grpc-js server's, at 64 callers and at one",
          status: ratios.every(({ x }) => x <= 1.5) ? "met" : "not met",
          detail: ratios.map(({ r, x }) => `${r.path.replace("fencekeeper, ", "")} at ${r.callers}: ${x.toFixed(2)}x`).join(", "),
        },
      ];
      return { json: { seconds, rows }, checks };
    } finally {
      toNullGrpc.close();
      toNullHttp2.close();
      store.close();
      lease.close();
      await nullGrpc.stop();
      await nullHttp2.stop();
    }
  },
};
