// Many leases kept alive (issue 9, targets 4 and 5): N leases held by one SDK client through one replica,
// TTL 10 s, for H seconds, on a fresh server so that earlier load is not in its heap. Counts the leases
// lost, samples the server's CPU (fraction of one core) and RSS every second; also at 1,000 leases on
// the way up, and idle, for how the cost grows. The peer: etcd3 holding N leases with its own
// keepalives (etcd.lease(ttl)), in this process, whose CPU and RSS are then the peer's cost.
//
// Sessions (--sessions) are for when the SDK has them: the flag is passed to FencekeeperClient as
// ClientOptions.sessions = true. Until the SDK has session support (detected, see sessionSupport()), the
// run says so and holds plain leases.
import { Etcd3, type Lease as EtcdLease } from "etcd3";
import { FencekeeperClient, LeaseLostError, type ClientOptions, type Lease } from "../client/index.js";
import { bounded, pool, sleep } from "./measure.js";
import { Sampler, type Stats } from "./process-stats.js";
import { mb, num, pct, ratio, Table } from "./report.js";
import type { Check, Context, Flags, Scenario } from "./scenario.js";

const TTL_SECONDS = 10;
/** Acquisitions (and grants, releases, revokes) in flight at once. */
const CONCURRENCY = 64;
/** The step on the way up where the cost is sampled too. */
const STEP = 1000;
const IDLE_SECONDS = 3;
/** Seconds between the last acquisition and a sampled window. */
const SETTLE_SECONDS = 2;
const RELEASE_SECONDS = 120;
const TARGET = { leases: 10_000, holdSeconds: 300, cpu: 0.25, rssMb: 200, sessionLeases: 100_000 };

/** Seconds the cost is sampled at the 1,000-lease step. */
const stepSeconds = (f: Flags) => Math.max(5, Math.min(15, f.hold / 4));
/** How long acquiring may take before the run gives up and holds what it has. */
const acquireSeconds = (f: Flags) => Math.max(120, f.leases / 50);

/** The SDK's session support: the names of FencekeeperClient's methods about sessions, if any. */
export function sessionSupport(): string[] {
  return Object.getOwnPropertyNames(FencekeeperClient.prototype).filter((n) => /session/i.test(n));
}

interface Window {
  /** Leases held while the window was sampled. */
  leases: number;
  server: Stats;
  client: Stats;
}

interface FencekeeperRun {
  requested: number;
  held: number;
  acquireSeconds: number;
  acquireFailed: number;
  acquireFirstError?: string;
  /** Lost while held, by cause (deadline, not-found, fenced). */
  lostByCause: Record<string, number>;
  lostDuringHold: number;
  lost: number;
  events: Record<string, number>;
  windows: Window[];
  releaseSeconds: number;
  releasedInTime: boolean;
  sessions: "off" | "on" | "not available";
  timeline: { t: number; cpu: number; rssMb: number; leases: string | number | undefined }[];
}

interface PeerRun {
  requested: number;
  held: number;
  grantSeconds: number;
  grantFailed: number;
  grantFirstError?: string;
  lostDuringHold: number;
  lost: number;
  idle: Stats;
  hold: Stats;
  revokeSeconds: number;
}

export const leases: Scenario = {
  name: "leases",
  about: "N leases (--leases) kept alive by one SDK client through one replica for --hold s: lost, server CPU and RSS; vs etcd3 leases",
  estimate: (f: Flags) => IDLE_SECONDS + f.leases / 150 + (f.leases > STEP ? stepSeconds(f) + SETTLE_SECONDS : 0) + SETTLE_SECONDS + 2 * f.hold + f.leases / 300 + 15,
  async run(ctx) {
    const f = ctx.flags;
    const support = sessionSupport();
    let sessions: FencekeeperRun["sessions"] = "off";
    if (f.sessions) {
      sessions = support.length > 0 ? "on" : "not available";
      if (sessions === "not available") {
        console.log("\nsessions: not available: FencekeeperClient has no session support yet; holding one lease per resource instead");
      }
    }
    const server = await ctx.freshServer();
    const fk = await holdThroughFencekeeper(ctx, server.url, server.process.pid!, sessions === "on");
    fk.sessions = sessions;
    const peer = await holdThroughEtcd3(ctx);
    return { json: { ttlSeconds: TTL_SECONDS, holdSeconds: f.hold, concurrency: CONCURRENCY, sessionSupport: support, fencekeeper: fk, etcd3: peer }, checks: print(f, fk, peer) };
  },
};

async function holdThroughFencekeeper(ctx: Context, url: string, pid: number, sessions: boolean): Promise<FencekeeperRun> {
  const f = ctx.flags;
  const events: Record<string, number> = {};
  let phase: "acquire" | "hold" | "release" = "acquire";
  const lostByCause: Record<string, number> = {};
  let lostDuringHold = 0;
  const options: ClientOptions = {
    servers: [url],
    onEvent: (e) => {
      events[e.type] = (events[e.type] ?? 0) + 1;
    },
  };
  // The SDK's session option, once it has one; the name is the SDK's to choose.
  const client = new FencekeeperClient({ ...options, sessions });
  const server = new Sampler(pid);
  const self = new Sampler(process.pid);
  const held: Lease[] = [];
  const windows: Window[] = [];
  const window = async (seconds: number, leases: number) => {
    server.label(leases);
    self.label(leases);
    // Let the tail of the acquisitions (answers, GC) pass, so that the window shows keeping alone.
    if (leases > 0) await sleep(SETTLE_SECONDS * 1000);
    const from = server.now();
    const fromSelf = self.now();
    await sleep(seconds * 1000);
    windows.push({ leases, server: server.stats(from), client: self.stats(fromSelf) });
  };
  const watch = (lease: Lease) => {
    lease.signal.addEventListener(
      "abort",
      () => {
        const why = lease.signal.reason instanceof LeaseLostError ? lease.signal.reason.why : "unknown";
        if (why === "released" || why === "canceled" || phase === "release") return;
        lostByCause[why] = (lostByCause[why] ?? 0) + 1;
        if (phase === "hold") lostDuringHold++;
      },
      { once: true },
    );
  };

  ctx.progress(`leases: fencekeeper server idle for ${IDLE_SECONDS} s`);
  await window(IDLE_SECONDS, 0);

  const names = Array.from({ length: f.leases }, (_, k) => `held-${ctx.runId}-${k}`);
  const deadline = performance.now() + acquireSeconds(f) * 1000;
  let acquireMs = 0;
  let acquireFailed = 0;
  let acquireFirstError: string | undefined;
  const acquireRange = async (from: number, to: number) => {
    ctx.progress(`leases: acquiring ${num(to - from)} leases, ${CONCURRENCY} at a time (${num(from)} held)`);
    const t = performance.now();
    server.label("acquiring");
    self.label("acquiring");
    const r = await pool(
      names.slice(from, to),
      CONCURRENCY,
      async (name) => {
        const lease = await client.acquire(name, { ttl: TTL_SECONDS * 1000 });
        held.push(lease);
        watch(lease);
      },
      deadline,
    );
    acquireMs += performance.now() - t;
    acquireFailed += r.failed;
    acquireFirstError ??= r.firstError;
  };
  if (f.leases > STEP) {
    await acquireRange(0, STEP);
    ctx.progress(`leases: holding ${num(held.length)} for ${stepSeconds(f)} s`);
    await window(stepSeconds(f), held.length);
    await acquireRange(STEP, f.leases);
  } else {
    await acquireRange(0, f.leases);
  }
  if (held.length < f.leases) ctx.progress(`leases: holding ${num(held.length)} of ${num(f.leases)}: ${acquireFailed} acquisitions failed (${acquireFirstError ?? "out of time"})`);

  phase = "hold";
  const holding = held.length;
  const holdStart = performance.now();
  const report = setInterval(() => {
    const s = server.samples.at(-1);
    const elapsed = (performance.now() - holdStart) / 1000;
    ctx.progress(`leases: holding ${num(holding)}, ${elapsed.toFixed(0)} of ${f.hold} s, lost ${num(lostDuringHold)} so far, server CPU ${pct(s?.cpu ?? NaN)}, RSS ${mb(s?.rssMb ?? NaN)} MB`);
  }, 15_000);
  ctx.progress(`leases: holding ${num(holding)} for ${f.hold} s`);
  await window(f.hold, holding);
  clearInterval(report);
  phase = "release";

  ctx.progress(`leases: releasing`);
  const t = performance.now();
  const alive = held.filter((l) => l.held);
  const releasedInTime = await bounded(
    pool(alive, CONCURRENCY, (l) => l.release()).then(() => client.close()),
    RELEASE_SECONDS * 1000,
  );
  const releaseSeconds = (performance.now() - t) / 1000;
  server.stop();
  self.stop();
  const lost = Object.values(lostByCause).reduce((a, b) => a + b, 0);
  return {
    requested: f.leases,
    held: holding,
    acquireSeconds: acquireMs / 1000,
    acquireFailed,
    ...(acquireFirstError ? { acquireFirstError } : {}),
    lostByCause,
    lostDuringHold,
    lost,
    events,
    windows,
    releaseSeconds,
    releasedInTime,
    sessions: "off",
    timeline: server.samples.map((s) => ({ t: Math.round(s.t * 10) / 10, cpu: Math.round(s.cpu * 1000) / 1000, rssMb: Math.round(s.rssMb), leases: s.label })),
  };
}

async function holdThroughEtcd3(ctx: Context): Promise<PeerRun> {
  const f = ctx.flags;
  const etcd = new Etcd3({ hosts: ctx.etcd.endpoint });
  const self = new Sampler(process.pid);
  let phase: "grant" | "hold" | "revoke" = "grant";
  let lost = 0;
  let lostDuringHold = 0;
  try {
    ctx.progress(`leases: etcd3 peer, this process idle for ${IDLE_SECONDS} s`);
    await sleep(IDLE_SECONDS * 1000);
    const idle = self.stats();

    ctx.progress(`leases: etcd3 peer granting ${num(f.leases)} leases, ${CONCURRENCY} at a time`);
    const held: EtcdLease[] = [];
    let t = performance.now();
    const granted = await pool(
      Array.from({ length: f.leases }, (_, k) => k),
      CONCURRENCY,
      async () => {
        const lease = etcd.lease(TTL_SECONDS);
        let granted = false;
        lease.on("lost", () => {
          // A refused grant emits "lost" too; that is a failed grant, not the loss of a held lease.
          if (!granted || phase === "revoke") return;
          lost++;
          if (phase === "hold") lostDuringHold++;
        });
        await lease.grant();
        granted = true;
        held.push(lease);
      },
      performance.now() + acquireSeconds(f) * 1000,
    );
    const grantSeconds = (performance.now() - t) / 1000;

    phase = "hold";
    ctx.progress(`leases: etcd3 peer holding ${num(held.length)} for ${f.hold} s`);
    const from = self.now();
    await sleep(f.hold * 1000);
    const hold = self.stats(from);
    phase = "revoke";

    ctx.progress(`leases: etcd3 peer revoking`);
    t = performance.now();
    await bounded(
      pool(held, CONCURRENCY, (l) => l.revoke()),
      RELEASE_SECONDS * 1000,
    );
    const revokeSeconds = (performance.now() - t) / 1000;
    return {
      requested: f.leases,
      held: held.length,
      grantSeconds,
      grantFailed: granted.failed,
      ...(granted.firstError ? { grantFirstError: granted.firstError } : {}),
      lostDuringHold,
      lost,
      idle,
      hold,
      revokeSeconds,
    };
  } finally {
    self.stop();
    etcd.close();
  }
}

function print(f: Flags, fk: FencekeeperRun, peer: PeerRun): Check[] {
  const hold = fk.windows.at(-1)!;
  const idle = fk.windows[0];
  const t1 = new Table(`${num(f.leases)} leases, TTL ${TTL_SECONDS} s, held ${f.hold} s: one SDK client through one replica vs etcd3 leases with their own keepalives`, [
    { title: "", width: 30, left: true },
    { title: "fencekeeper", width: 14 },
    { title: "etcd3 leases", width: 14 },
  ]);
  t1.row(["acquired (granted)", num(fk.held), num(peer.held)]);
  t1.row([
    `acquired in, ${CONCURRENCY} at a time (s)`,
    `${fk.acquireSeconds.toFixed(1)} (${num(fk.held / fk.acquireSeconds)}/s)`,
    `${peer.grantSeconds.toFixed(1)} (${num(peer.held / peer.grantSeconds)}/s)`,
  ]);
  t1.row(["failed to acquire", num(fk.acquireFailed), num(peer.grantFailed)]);
  t1.row(["lost while held", num(fk.lostDuringHold), num(peer.lostDuringHold)]);
  t1.row(["lost in all, acquiring too", num(fk.lost), num(peer.lost)]);
  t1.row([`released in (s)`, `${fk.releaseSeconds.toFixed(1)}${fk.releasedInTime ? "" : " (gave up)"}`, peer.revokeSeconds.toFixed(1)]);
  if (fk.lost > 0) t1.note(`fencekeeper losses by cause: ${Object.entries(fk.lostByCause).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  if (fk.acquireFirstError) t1.note(`first failed acquisition: ${fk.acquireFirstError}`);
  if (peer.grantFirstError) t1.note(`first failed grant: ${peer.grantFirstError}`);
  t1.note(`SDK events: ${Object.entries(fk.events).map(([k, v]) => `${k} ${num(v)}`).join(", ")}`);
  t1.note(`sessions: ${fk.sessions}`);

  const t2 = new Table(`cost while holding ${num(fk.held)} leases: CPU as a fraction of one core, RSS in MB, sampled every second`, [
    { title: "", width: 10, left: true },
    { title: "fk server", width: 9 },
    { title: "SDK client", width: 10 },
    { title: "etcd3 peer", width: 10 },
    { title: "server/peer", width: 11 },
    { title: "server+client/peer", width: 18 },
  ]);
  const rows: [string, (s: Stats) => number, (x: number) => string][] = [
    ["CPU mean", (s) => s.cpuMean, pct],
    ["CPU max", (s) => s.cpuMax, pct],
    ["RSS mean", (s) => s.rssMeanMb, mb],
    ["RSS max", (s) => s.rssMaxMb, mb],
  ];
  for (const [what, pick, fmt] of rows) {
    t2.row([what, fmt(pick(hold.server)), fmt(pick(hold.client)), fmt(pick(peer.hold)), ratio(pick(hold.server) / pick(peer.hold)), ratio((pick(hold.server) + pick(hold.client)) / pick(peer.hold))]);
  }
  // This process held other things before (the SDK client, earlier scenarios): what the leases added.
  const grown = [hold.server.rssMaxMb - idle.server.rssMeanMb, hold.client.rssMaxMb - idle.client.rssMeanMb, peer.hold.rssMaxMb - peer.idle.rssMeanMb];
  t2.row(["RSS added", ...grown.map(mb), "-", "-"]);
  t2.note("RSS added: max while holding minus idle before; this process's RSS seldom shrinks, so its growth can hide in memory taken earlier.");
  t2.note(`idle before: fk server ${pct(idle.server.cpuMean)} CPU, ${mb(idle.server.rssMeanMb)} MB; this process ${pct(peer.idle.cpuMean)}, ${mb(peer.idle.rssMeanMb)} MB (the SDK client and the etcd3 peer run in it).`);

  const t3 = new Table("how the cost grows with held leases (fencekeeper server; the SDK client beside it)", [
    { title: "leases", width: 7 },
    { title: "CPU mean", width: 8 },
    { title: "CPU max", width: 7 },
    { title: "RSS mean", width: 8 },
    { title: "RSS max", width: 7 },
    { title: "client CPU", width: 10 },
    { title: "client RSS", width: 10 },
  ]);
  for (const w of fk.windows) {
    t3.row([num(w.leases), pct(w.server.cpuMean), pct(w.server.cpuMax), mb(w.server.rssMeanMb), mb(w.server.rssMaxMb), pct(w.client.cpuMean), mb(w.client.rssMeanMb)]);
  }
  // A slope over a small step would mostly be noise.
  if (fk.windows.length >= 3 && fk.windows.at(-1)!.leases >= 2 * fk.windows.at(-2)!.leases) {
    const [a, b] = fk.windows.slice(-2);
    const per = (x: number, y: number, fmt: (x: number) => string) => {
      const d = ((y - x) / (b.leases - a.leases)) * 1000;
      return `${d < 0 ? "-" : "+"}${fmt(Math.abs(d))}`;
    };
    t3.note(
      `from ${num(a.leases)} to ${num(b.leases)}: ${per(a.server.cpuMean, b.server.cpuMean, pct)} of a core and ` +
        `${per(a.server.rssMeanMb, b.server.rssMeanMb, mb)} MB per 1,000 leases.`,
    );
  }
  if (fk.sessions !== "on") t3.note(`${num(TARGET.sessionLeases)} with sessions: not measured in this run (npm run bench -- --only leases --sessions --leases ${TARGET.sessionLeases}).`);

  const ok = fk.held === f.leases && fk.lost === 0 && hold.server.cpuMean < TARGET.cpu && hold.server.rssMaxMb < TARGET.rssMb;
  const full = f.leases >= TARGET.leases && f.hold >= TARGET.holdSeconds;
  const targetLeases = fk.sessions === "on" ? TARGET.sessionLeases : TARGET.leases;
  const detail =
    `${num(fk.held)} held, ${num(fk.lost)} lost, server CPU mean ${pct(hold.server.cpuMean)}, RSS max ${mb(hold.server.rssMaxMb)} MB` +
    (full
      ? ""
      : ` (at ${num(f.leases)} leases for ${f.hold} s; the target run is ${fk.sessions === "on" ? "--sessions " : ""}--leases ${targetLeases} --hold ${TARGET.holdSeconds})`);
  const sessionTarget = fk.sessions === "on" && f.leases >= TARGET.sessionLeases;
  return [
    {
      target: `4. ${num(TARGET.leases)} leases, TTL ${TTL_SECONDS} s, ${TARGET.holdSeconds / 60} min: 0 lost, server < ${TARGET.cpu} core, < ${TARGET.rssMb} MB`,
      status: fk.sessions === "on" ? "not measured" : ok ? (full ? "met" : "met at a smaller size") : "not met",
      detail: fk.sessions === "on" ? "this run held its leases on sessions; run without --sessions" : detail,
    },
    {
      target: `4. with sessions: ${num(TARGET.sessionLeases)} held resources under the same bounds`,
      status: sessionTarget ? (ok && f.hold >= TARGET.holdSeconds ? "met" : ok ? "met at a smaller size" : "not met") : "not measured",
      detail:
        fk.sessions === "on"
          ? sessionTarget
            ? detail
            : `sessions on, but at ${num(f.leases)} resources; the target run is --sessions --leases ${TARGET.sessionLeases} --hold ${TARGET.holdSeconds}`
          : fk.sessions === "not available"
            ? "the SDK has no session support yet"
            : "run with --sessions",
    },
    {
      target: "5. How cost grows: server CPU and RSS at 1k, 10k (100k with sessions) held leases",
      status: "reported",
      detail: `the table above, at ${fk.windows.map((w) => num(w.leases)).join(", ")} leases`,
    },
  ];
}
