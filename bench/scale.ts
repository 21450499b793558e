// Many resources held on one deployment (issue 41): a 3-member etcd cluster and 3 replicas started for
// this scenario alone, and SDK clients holding resources on sessions (--per-session resources a session,
// renewed by the SDK as it renews any session). For each size of --held, ascending (the held set grows
// from one size to the next): the time to acquire them; over --hold seconds, the CPU and the peak and last RSS of each
// replica and each etcd member, the sessions' renewals a second and etcd's database size; a fresh
// Acquire's and a fenced Put's p50/p99 beside that load, and an Observe's to its first message, against
// the same measured before anything was held, in the same run; leases lost. Then a replica killed
// (SIGKILL) and started again under the largest size: how long until it answers, and whether any held
// resource was lost; then a rolling restart, each
// of the three killed and started again in turn, the next once the one before answers. A replica comes
// back on its own port, where the clients' server lists name it.
//   npm run bench -- --only scale --held 100000,300000 --per-session 500 --hold 60
import { EtcdCluster } from "../test/faults/etcd-cluster.js";
import { clientsFor, type Clients } from "../test/harness/clients.js";
import { startServer, type TestServer } from "../test/harness/server.js";
import { scrape } from "../test/operations/support/metrics.js";
import { FencekeeperClient, LeaseLostError, type Lease } from "../client/index.js";
import { percentile, pool, sleep } from "./measure.js";
import { readProcess, Sampler } from "./process-stats.js";
import { mb, ms, num, ratio, Table } from "./report.js";
import type { Check, Context, Flags, Outcome, Scenario } from "./scenario.js";

/** Acquisitions in flight while the held set grows. */
const CONCURRENCY = 128;
/** The sessions' TTL: the SDK renews each every third of it. */
const TTL_MS = 10_000;
/** The targets of issue 41. */
const TARGET = { bytesPerHeld: 1024, cpuPer100k: 0.1, acquireP99: 3, restartMs: 10_000 };

interface Latency {
  acquire: { p50: number; p99: number; n: number };
  put: { p50: number; p99: number; n: number };
  /** An Observe of a held resource (any, at random), from its call to its first message. */
  observe: { p50: number; p99: number; n: number };
}

interface SizeRow {
  held: number;
  sessions: number;
  acquireSeconds: number;
  acquireFailed: number;
  renewalsPerSecond: number;
  /** rssMb: the peak over the hold, above idle; settledMb: at its end (V8 gives back what a burst of acquisitions grew, tens of seconds later). */
  replicas: { cpu: number; rssMb: number; settledMb: number }[];
  members: { cpu: number; rssMb: number }[];
  etcdDbMb: number;
  latency: Latency;
  lost: number;
}

/**
 * A fresh Acquire (a lease of its own, on a new resource), a fenced Put with its token and its Release,
 * one after another for `seconds`; beside them, Observes of resources `observed` names, one after
 * another, each ended at its first message.
 */
async function trickle(c: Clients, prefix: string, seconds: number, observed: () => string): Promise<Latency> {
  const acquire: number[] = [];
  const put: number[] = [];
  const observe: number[] = [];
  const end = performance.now() + seconds * 1000;
  const observing = (async () => {
    while (performance.now() < end) {
      const t = performance.now();
      // Leaving the loop ends the stream (the client cancels it).
      for await (const _ of c.lease.observe({ resource: observed() }, { timeoutMs: 10_000 })) {
        observe.push(performance.now() - t);
        break;
      }
    }
  })();
  for (let i = 0; performance.now() < end; i++) {
    const resource = `${prefix}-${i}`;
    let t = performance.now();
    const { token } = await c.lease.acquire({ resource, ttl: { seconds: 10n, nanos: 0 }, holder: "trickle" });
    acquire.push(performance.now() - t);
    t = performance.now();
    await c.store.put({ resource, key: "k", value: Buffer.from("v"), mutation: { token } });
    put.push(performance.now() - t);
    await c.lease.release({ token });
  }
  await observing;
  const summary = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { p50: percentile(s, 50), p99: percentile(s, 99), n: s.length };
  };
  return { acquire: summary(acquire), put: summary(put), observe: summary(observe) };
}

/** Renewals the replicas answered so far (every method, every result). */
async function renewals(replicas: TestServer[]): Promise<number> {
  let n = 0;
  for (const r of replicas) {
    for (const x of (await scrape(r)).samples) if (x.name === "fencekeeper_lease_renewals_total") n += x.value;
  }
  return n;
}

/** etcd's database size as its first member reports it, MB. */
async function etcdDbMb(cluster: EtcdCluster): Promise<number> {
  const text = await (await fetch(`${cluster.members[0].clientUrl}/metrics`)).text();
  const m = /^etcd_mvcc_db_total_size_in_bytes (\S+)$/m.exec(text);
  return m ? Number(m[1]) / 2 ** 20 : NaN;
}

async function run(ctx: Context): Promise<Outcome> {
  const { flags } = ctx;
  const sizes = [...flags.held].sort((a, b) => a - b);
  ctx.progress(`scale: starting 3 etcd members and 3 replicas`);
  const cluster = await EtcdCluster.start(3);
  const prefix = `/fk-scale-${ctx.runId}/`;
  const start = (port?: string) => startServer({ etcd: cluster.endpoints.join(","), prefix, args: ["--log-level", "info", ...(port ? ["--listen", `127.0.0.1:${port}`] : [])] });
  /** Kills replica i and starts it again on its port: ms until it answers a Describe. */
  const restartReplica = async (i: number): Promise<number> => {
    const port = new URL(replicas[i].url).port;
    replicas[i].process.kill("SIGKILL");
    await replicas[i].stop().catch(() => undefined);
    const t = performance.now();
    replicas[i] = await start(port);
    await clientsFor(replicas[i].url).lease.describe({ resource: `scale-${ctx.runId}-0` });
    return performance.now() - t;
  };
  const replicas: TestServer[] = [];
  const holders: FencekeeperClient[] = [];
  const held: Lease[] = [];
  let lost = 0;
  const rows: SizeRow[] = [];
  let restart: { ms: number; lostAfter: number } | undefined;
  let rolling: { ms: number[]; lostAfter: number } | undefined;
  let empty: Latency;
  try {
    for (let i = 0; i < 3; i++) replicas.push(await start());
    const urls = replicas.map((r) => r.url);
    const measured = clientsFor(urls[0]);
    await sleep(2000);
    ctx.progress("scale: a fresh Acquire and a fenced Put with nothing held");
    // With nothing held, the Observes name resources nobody holds (their first message says so).
    empty = await trickle(measured, `scale-${ctx.runId}-empty`, flags.seconds, () => `scale-${ctx.runId}-${Math.floor(Math.random() * 1000)}`);
    const idle = replicas.map((r) => readProcess(r.process.pid!)?.rssMb ?? NaN);
    // What the replicas spend with nothing held (health probes, timers): subtracted from what holding costs.
    const idleSamplers = replicas.map((x) => new Sampler(x.process.pid!));
    await sleep(Math.min(10, flags.hold) * 1000);
    for (const x of idleSamplers) x.stop();
    const idleCpu = idleSamplers.map((x) => x.stats().cpuMean);

    let next = 0;
    for (const size of sizes) {
      ctx.progress(`scale: acquiring up to ${size.toLocaleString("en-US")} resources on sessions of ${flags.perSession}`);
      const from = performance.now();
      const indexes = Array.from({ length: size - next }, (_, i) => next + i);
      const r = await pool(indexes, CONCURRENCY, async (i) => {
        const c = Math.floor(i / flags.perSession);
        // Each client on a replica of its own first (the SDK goes to its first server while it answers).
        while (holders.length <= c) {
          const first = holders.length % urls.length;
          holders.push(new FencekeeperClient({ servers: [...urls.slice(first), ...urls.slice(0, first)], sessions: true }));
        }
        const lease = await holders[c].acquire(`scale-${ctx.runId}-${i}`, { ttl: TTL_MS });
        lease.signal.addEventListener("abort", () => {
          if ((lease.signal.reason as LeaseLostError).why !== "released") lost++;
        });
        held.push(lease);
      });
      next = size;
      const acquireSeconds = (performance.now() - from) / 1000;

      ctx.progress(`scale: ${held.length.toLocaleString("en-US")} held; a fresh Acquire and Put for ${flags.seconds} s, then ${flags.hold} s of renewals alone`);
      const latency = await trickle(measured, `scale-${ctx.runId}-at-${size}`, flags.seconds, () => `scale-${ctx.runId}-${Math.floor(Math.random() * held.length)}`);
      // The cost of holding: renewals alone, without the trickle's calls.
      const samplers = [...replicas.map((x) => new Sampler(x.process.pid!)), ...cluster.members.map((m) => new Sampler(m.process!.pid!))];
      const renewedBefore = await renewals(replicas);
      const t0 = performance.now();
      await sleep(flags.hold * 1000);
      const renewed = (await renewals(replicas)) - renewedBefore;
      const seconds = (performance.now() - t0) / 1000;
      for (const s of samplers) s.stop();
      const stats = samplers.map((s) => s.stats());
      rows.push({
        held: held.length,
        sessions: holders.length,
        acquireSeconds,
        acquireFailed: r.failed,
        renewalsPerSecond: renewed / seconds,
        replicas: stats.slice(0, 3).map((s, i) => ({ cpu: s.cpuMean - idleCpu[i], rssMb: s.rssMaxMb - idle[i], settledMb: s.rssLastMb - idle[i] })),
        members: stats.slice(3).map((s) => ({ cpu: s.cpuMean, rssMb: s.rssMaxMb })),
        etcdDbMb: await etcdDbMb(cluster),
        latency,
        lost,
      });
      if (r.firstError) ctx.progress(`scale: ${r.failed} acquisitions failed; the first: ${r.firstError}`);
    }

    ctx.progress("scale: a replica killed and started again");
    const lostBefore = lost;
    const restartMs = await restartReplica(0);
    // Two TTLs: any session that depended on the killed replica and was not renewed elsewhere is gone by then.
    await sleep(2 * TTL_MS);
    restart = { ms: restartMs, lostAfter: lost - lostBefore };

    ctx.progress("scale: a rolling restart, each replica killed and started again in turn");
    const lostBeforeRolling = lost;
    const rollingMs: number[] = [];
    for (let i = 0; i < replicas.length; i++) rollingMs.push(await restartReplica(i));
    await sleep(2 * TTL_MS);
    rolling = { ms: rollingMs, lostAfter: lost - lostBeforeRolling };
  } finally {
    ctx.progress("scale: releasing and stopping");
    await Promise.all(holders.map((h) => h.close().catch(() => undefined)));
    await Promise.all(replicas.map((r) => r.stop().catch(() => undefined)));
    await cluster.destroy();
  }

  const table = new Table(
    `held on sessions (${flags.perSession} a session, TTL ${TTL_MS / 1000} s) through 3 replicas on a 3-member etcd; CPU as a fraction of a core over ${flags.hold} s of renewals alone and peak RSS in MB (replicas: above idle; bytes/held from the peak, settled from the last sample of the hold); Acquire and Put: one at a time for ${flags.seconds} s before that, Observes (to the first message, of a held resource at random) beside them`,
    [
      { title: "held", width: 9 },
      { title: "acquired in s", width: 8 },
      { title: "renewals/s", width: 8 },
      { title: "replica CPU", width: 16 },
      { title: "replica RSS", width: 14 },
      { title: "bytes/held", width: 8 },
      { title: "settled", width: 8 },
      { title: "etcd CPU", width: 16 },
      { title: "etcd RSS", width: 14 },
      { title: "etcd db MB", width: 8 },
      { title: "Acquire p50/p99 ms", width: 14 },
      { title: "Put p50/p99 ms", width: 14 },
      { title: "Observe p50/p99 ms", width: 14 },
      { title: "lost", width: 4 },
    ],
  );
  const three = (xs: number[], f: (x: number) => string) => xs.map(f).join(" ");
  const bytesPerHeld = (row: SizeRow) => (row.replicas.reduce((a, r) => a + r.rssMb, 0) * 2 ** 20) / row.held;
  const settledPerHeld = (row: SizeRow) => (row.replicas.reduce((a, r) => a + r.settledMb, 0) * 2 ** 20) / row.held;
  table.row(["0", "-", "-", "-", "-", "-", "-", "-", "-", "-", `${ms(empty!.acquire.p50)}/${ms(empty!.acquire.p99)}`, `${ms(empty!.put.p50)}/${ms(empty!.put.p99)}`, `${ms(empty!.observe.p50)}/${ms(empty!.observe.p99)}`, "-"]);
  for (const row of rows) {
    table.row([
      num(row.held),
      num(row.acquireSeconds, 1),
      num(row.renewalsPerSecond),
      three(row.replicas.map((r) => r.cpu), (x) => x.toFixed(2)),
      three(row.replicas.map((r) => r.rssMb), mb),
      num(bytesPerHeld(row)),
      num(settledPerHeld(row)),
      three(row.members.map((r) => r.cpu), (x) => x.toFixed(2)),
      three(row.members.map((r) => r.rssMb), mb),
      num(row.etcdDbMb, 1),
      `${ms(row.latency.acquire.p50)}/${ms(row.latency.acquire.p99)}`,
      `${ms(row.latency.put.p50)}/${ms(row.latency.put.p99)}`,
      `${ms(row.latency.observe.p50)}/${ms(row.latency.observe.p99)}`,
      num(row.lost),
    ]);
  }
  if (restart) table.note(`a replica killed and started again at ${num(rows.at(-1)?.held ?? 0)} held: answering after ${num(restart.ms)} ms; lost in the two TTLs after: ${restart.lostAfter}`);
  if (rolling) table.note(`a rolling restart (each of the 3 killed and started again in turn): answering after ${rolling.ms.map((x) => num(x)).join(", ")} ms; lost in the two TTLs after the last: ${rolling.lostAfter}`);

  const last = rows.at(-1);
  const checks: Check[] = [];
  if (last) {
    const cpu = last.replicas.reduce((a, r) => a + r.cpu, 0) / (last.held / 100_000);
    const met = (ok: boolean) => (ok ? (last.held >= 1_000_000 ? "met" : "met at a smaller size") : "not met");
    checks.push(
      { target: "41.1 held on sessions through 3 replicas, 0 lost", status: met(last.lost === 0), detail: `${num(last.held)} held, ${last.lost} lost` },
      { target: "41.2 replica memory at most 1 KB a held resource above idle", status: met(settledPerHeld(last) <= TARGET.bytesPerHeld), detail: `${num(settledPerHeld(last))} bytes at the end of ${flags.hold} s of renewals alone, ${num(bytesPerHeld(last))} at the peak (RSS, all replicas)` },
      { target: "41.3 replica CPU at most 0.1 core per 100k held", status: met(cpu <= TARGET.cpuPer100k), detail: `${cpu.toFixed(3)} of a core per 100k (mean over ${flags.hold} s of renewals alone, all replicas)` },
      {
        target: "41.4 a fresh Acquire's p99 at most 3x its p99 on an empty deployment",
        status: met(last.latency.acquire.p99 <= TARGET.acquireP99 * empty!.acquire.p99),
        detail: `${ms(last.latency.acquire.p99)} vs ${ms(empty!.acquire.p99)} ms: ${ratio(last.latency.acquire.p99 / empty!.acquire.p99)}`,
      },
    );
    if (restart) checks.push({ target: "41.5 a replica restarted: serving within 10 s, nothing lost", status: met(restart.ms <= TARGET.restartMs && restart.lostAfter === 0), detail: `${num(restart.ms)} ms, ${restart.lostAfter} lost` });
    if (rolling) {
      checks.push({
        target: "41.5 a rolling restart of all three: each serving within 10 s, nothing lost",
        status: met(Math.max(...rolling.ms) <= TARGET.restartMs && rolling.lostAfter === 0),
        detail: `${rolling.ms.map((x) => num(x)).join(", ")} ms, ${rolling.lostAfter} lost`,
      });
    }
  }
  return { json: { perSession: flags.perSession, ttlMs: TTL_MS, empty: empty!, rows, restart, rolling }, checks };
}

export const scale: Scenario = {
  name: "scale",
  about: "resources held on sessions (--held N[,N...], --per-session) through 3 replicas on a 3-member etcd: acquire time, CPU and RSS of each process, etcd's size, fresh Acquire and Put p99 vs empty, lost, a replica's restart and a rolling restart",
  estimate: (f: Flags) => f.held.reduce((t, n) => t + n / 800 + f.hold + f.seconds, 0) + 120,
  run,
};
