// The lock path's cost, from /proc around each row: Acquire (wait) + Release cycles through grpc-js
// stubs, each locker on a resource of its own, at 1, 16 and 128 lockers, with a lease per acquisition
// and on a session; Renew alone; the Release's own latency; and the handover, from the start of the
// holder's Release to the waiter's answer. CPU per cycle of the server and of etcd each. Rows run twice
// in turn (the machine's neighbours move single rows): compare figures of one run, not of two. Renew is
// measured beside a null grpc-js server answering it (null-server.ts): the floor of a unary call.
//   node --import tsx bench/lock-cpu.ts [--seconds S] [--lockers 1,16,128] [--handovers N] [--rounds R] [--profile DIR] [--compare DIST]
// --profile: each server writes a CPU profile under DIR when it exits (as node --cpu-prof), and the top
// entries by self time are printed. --compare: a second server, the compiled build in DIST (a copy of
// dist/ from another commit), each on an etcd of its own, its rows run in turn with this build's.
// FK_TEST_COMPILED=1 runs this build's dist/ (npm run build first), as --compare runs the other.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { Etcd3 } from "etcd3";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import {
  AcquireRequestSchema,
  AcquireResponseSchema,
  LeaseService,
  OpenSessionRequestSchema,
  OpenSessionResponseSchema,
  ReleaseRequestSchema,
  ReleaseResponseSchema,
  RenewRequestSchema,
  RenewResponseSchema,
} from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { startEmbeddedEtcd } from "../server/etcd/embedded.js";
import { startServer } from "../test/harness/server.js";
import { writeCounts } from "../test/harness/batching.js";
import { measure } from "./measure.js";
import { readProcess } from "./process-stats.js";
import { topEntries } from "./profile-top.js";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "3" },
    lockers: { type: "string", default: "1,16,128" },
    handovers: { type: "string", default: "200" },
    rounds: { type: "string", default: "2" },
    profile: { type: "string" },
    compare: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const lockerRows = values.lockers.split(",").map(Number);
const PROFILER = fileURLToPath(new URL("./cpu-profile.mjs", import.meta.url));
const TTL = { seconds: 10n, nanos: 0 };

/** A unary call of the lease service through a plain grpc-js client. */
class Lease {
  readonly #client: grpc.Client;
  constructor(url: string) {
    this.#client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
  }
  #call<I extends DescMessage, O extends DescMessage>(method: string, i: I, o: O, req: MessageInitShape<I>): Promise<MessageShape<O>> {
    return new Promise((resolve, reject) =>
      this.#client.makeUnaryRequest(
        `/${LeaseService.typeName}/${method}`,
        (r: MessageInitShape<I>) => Buffer.from(toBinary(i, create(i, r))),
        (b: Buffer) => fromBinary(o, b),
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + 60_000 },
        (err, res) => (err ? reject(err) : resolve(res!)),
      ),
    );
  }
  acquire = (r: MessageInitShape<typeof AcquireRequestSchema>) => this.#call("Acquire", AcquireRequestSchema, AcquireResponseSchema, r);
  release = (r: MessageInitShape<typeof ReleaseRequestSchema>) => this.#call("Release", ReleaseRequestSchema, ReleaseResponseSchema, r);
  renew = (r: MessageInitShape<typeof RenewRequestSchema>) => this.#call("Renew", RenewRequestSchema, RenewResponseSchema, r);
  openSession = (r: MessageInitShape<typeof OpenSessionRequestSchema>) => this.#call("OpenSession", OpenSessionRequestSchema, OpenSessionResponseSchema, r);
  close = () => this.#client.close();
}

interface Variant {
  name: string;
  lease: Lease;
  raw: Etcd3;
  sessions: bigint[];
  cpu(): { server: number; etcd: number };
  /** etcd write requests the server made so far (its metrics). */
  writes(): Promise<number>;
  stop(): Promise<void>;
}

/** An etcd and a server of its own; command: the server's program (default the harness's). */
async function variant(name: string, command?: string[]): Promise<Variant> {
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-lock-cpu-"));
  const etcd = await startEmbeddedEtcd({ dataDir: dir });
  const profile = values.profile && join(values.profile, name);
  const server = await startServer({
    etcd: etcd.endpoint,
    args: ["--log-level", "info"],
    ...(command ? { command } : {}),
    env: profile ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${PROFILER}`.trim(), FENCEKEEPER_BENCH_PROFILE_DIR: profile } : {},
  });
  const lease = new Lease(server.url);
  const raw = new Etcd3({ hosts: etcd.endpoint });
  const sessions = await Promise.all(Array.from({ length: Math.max(16, ...lockerRows) }, async () => (await lease.openSession({ ttl: { seconds: 60n, nanos: 0 }, holder: "bench" })).sessionId));
  // Kept open for the whole run, however long the machine makes it.
  const keep = setInterval(() => void Promise.all(sessions.map((leaseId) => lease.renew({ leaseId }))).catch(() => undefined), 15_000);
  const pids = { server: server.process.pid!, etcd: etcd.process.pid! };
  return {
    name,
    lease,
    raw,
    sessions,
    cpu: () => ({ server: readProcess(pids.server)!.cpuSeconds, etcd: readProcess(pids.etcd)!.cpuSeconds }),
    writes: async () => (await writeCounts(server)).requests,
    async stop() {
      clearInterval(keep);
      lease.close();
      raw.close();
      await server.stop();
      await etcd.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const perOp = (a: { server: number; etcd: number }, b: { server: number; etcd: number }, ops: number) =>
  `server ${Math.round(((b.server - a.server) * 1e6) / ops)} + etcd ${Math.round(((b.etcd - a.etcd) * 1e6) / ops)} µs CPU`;

/** The null grpc-js server (null-server.ts) in a process of its own: its URL and pid. */
async function nullServer(): Promise<{ url: string; pid: number; stop(): void }> {
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./null-server.ts", import.meta.url)), "--kind", "grpc-js"], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on("line", (l) => {
      const m = /^listening (\d+)$/.exec(l);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`the null server exited (${code}) before it served`)));
  });
  return { url: `http://127.0.0.1:${port}`, pid: child.pid!, stop: () => child.kill("SIGTERM") };
}

const floor = await nullServer();
const floorLease = new Lease(floor.url);
const variants = [await variant("this build")];
if (values.compare) variants.push(await variant(`build in ${values.compare}`, [process.execPath, join(values.compare, "server/main.js")]));
const run = process.pid;
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const lockers of lockerRows) {
      for (const onSession of [false, true]) {
        for (const v of variants) {
          const releases: number[] = [];
          const op = async (w: number) => {
            const resource = `lock-cpu-${run}-${round}-${lockers}-${onSession ? "s" : "l"}-${w}`;
            const { token } = await v.lease.acquire({ resource, holder: "bench", wait: true, ...(onSession ? { sessionId: v.sessions[w] } : { ttl: TTL }) });
            const at = performance.now();
            await v.lease.release({ token });
            releases.push(performance.now() - at);
          };
          await measure({ workers: lockers, seconds: 0.5, op });
          releases.length = 0;
          const writesBefore = await v.writes();
          const before = v.cpu();
          const m = await measure({ workers: lockers, seconds, op, warmUp: false });
          const after = v.cpu();
          const writes = (await v.writes()) - writesBefore;
          releases.sort((a, b) => a - b);
          console.log(
            `${v.name}, round ${round}, ${String(lockers).padStart(3)} lockers, ${onSession ? "session   " : "lease each"}: ${Math.round(m.perSecond)} cycles/s, ` +
              `cycle p50 ${m.p50Ms.toFixed(2)} ms, release p50 ${q(releases, 0.5).toFixed(2)} ms, ${perOp(before, after, m.ops)} per cycle, ` +
              `${(writes / m.ops).toFixed(2)} etcd transactions per cycle (committer requests)` +
              (m.errors ? `, ${m.errors} errors (${m.firstError})` : ""),
          );
        }
      }
    }
    for (const v of variants) {
      // The floor: one etcd write transaction through etcd3 (grpc-js), a put then a delete, as a lock and its release.
      const times: number[] = [];
      for (let i = 0; i < 100; i++) {
        const key = `/lock-cpu-floor/${run}/${round}/${i}`;
        await v.raw.put(key).value("x");
        const at = performance.now();
        await v.raw.delete().key(key);
        times.push(performance.now() - at);
      }
      times.sort((a, b) => a - b);
      console.log(`${v.name}, round ${round}, etcd3 delete (the floor of a release): p50 ${q(times, 0.5).toFixed(2)} ms, p99 ${q(times, 0.99).toFixed(2)} ms`);
    }
    // Renew alone, at 1 and 16 callers, on leases of sessions, beside the null server's Renew: the ratio
    // of the server's CPU per call to the floor's.
    for (const callers of [1, 16]) {
      const at = () => readProcess(floor.pid)!.cpuSeconds;
      const nullOp = () => floorLease.renew({ leaseId: 1n });
      await measure({ workers: callers, seconds: 0.5, op: nullOp });
      const before = at();
      const n = await measure({ workers: callers, seconds, op: nullOp, warmUp: false });
      const nullUs = ((at() - before) * 1e6) / n.ops;
      console.log(`null grpc-js server, round ${round}, ${String(callers).padStart(3)} callers, renew: ${Math.round(n.perSecond)} calls/s, p50 ${n.p50Ms.toFixed(2)} ms, ${Math.round(nullUs)} µs CPU per call`);
      for (const v of variants) {
        const op = (w: number) => v.lease.renew({ leaseId: v.sessions[w] });
        await measure({ workers: callers, seconds: 0.5, op });
        const before = v.cpu();
        const m = await measure({ workers: callers, seconds, op, warmUp: false });
        const after = v.cpu();
        const serverUs = ((after.server - before.server) * 1e6) / m.ops;
        console.log(
          `${v.name}, round ${round}, ${String(callers).padStart(3)} callers, renew: ${Math.round(m.perSecond)} renewals/s, p50 ${m.p50Ms.toFixed(2)} ms, ` +
            `${perOp(before, after, m.ops)} per renewal; server / null server ${(serverUs / nullUs).toFixed(2)}x`,
        );
      }
    }
    // Handovers: a holder, a waiter behind it, the time from the start of the holder's Release to the waiter's answer.
    for (const onSession of [false, true]) {
      const times = new Map(variants.map((v) => [v, [] as number[]]));
      for (let i = 0; i < Number(values.handovers); i++) {
        for (const v of variants) {
          const resource = `handover-${run}-${round}-${onSession ? "s" : "l"}-${i % 4}`;
          const how = (w: number) => (onSession ? { sessionId: v.sessions[w] } : { ttl: TTL });
          const { token } = await v.lease.acquire({ resource, holder: "bench", ...how(0) });
          const waiter = v.lease.acquire({ resource, holder: "bench", wait: true, ...how(1) });
          // The waiter is in line once its call has reached the server and joined: give it that time.
          await new Promise((r) => setTimeout(r, 20));
          const at = performance.now();
          await v.lease.release({ token });
          const granted = await waiter;
          times.get(v)!.push(performance.now() - at);
          await v.lease.release({ token: granted.token });
        }
      }
      for (const v of variants) {
        const t = times.get(v)!.sort((a, b) => a - b);
        console.log(`${v.name}, round ${round}, handover, ${onSession ? "session   " : "lease each"}: p50 ${q(t, 0.5).toFixed(2)} ms, p99 ${q(t, 0.99).toFixed(2)} ms (${t.length})`);
      }
    }
  }
} finally {
  for (const v of variants) await v.stop();
  floorLease.close();
  floor.stop();
}
if (values.profile) {
  for (const v of variants) {
    const d = join(values.profile, v.name);
    for (const f of readdirSync(d).filter((f) => f.endsWith(".cpuprofile"))) {
      const { busySamples, entries } = topEntries(join(d, f), 10);
      console.log(`${v.name}: profile ${f}, ${busySamples} busy samples, top 10 by self time`);
      for (const e of entries) console.log(`  ${(e.share * 100).toFixed(1).padStart(5)}%  ${e.name}`);
    }
  }
}

function q(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN;
}
