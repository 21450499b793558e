// The lock path beside its peers (bench/peers/README.md): fencekeeper through its Go, Java and TypeScript
// clients, etcd's Go concurrency package, Apache Curator on ZooKeeper and redsync on Redis, the same
// workloads on each, the systems interleaved over rounds, medians and ratios to fencekeeper, CPU of every
// process from /proc. Prints markdown tables, writes bench/peers/results/<date>.json and an SVG chart.
//   npm run bench:peers                                   the defaults (3 rounds, 5 s a row, 60 s hold)
//   npm run bench:peers -- --rounds 1 --levels 1,4 --seconds 2 --hold-seconds 5 --holds 500
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readProcess, Sampler } from "../process-stats.js";
import { chart } from "./chart.js";
import { startEtcdService, startFencekeeperService, startRedisService, startZooKeeperService, type Service } from "./services.js";
import { SYSTEMS, workerCommand, type ServiceName, type SystemDef, type Workload } from "./systems.js";
import { Worker } from "./worker.js";

const WORKLOADS: Workload[] = ["cycles", "handover", "crash", "hold", "timeline"];
const CRASH_TTL = 2;
const CYCLE_TTL = 10;

const USAGE = `usage: npm run bench:peers -- [options]

  --rounds N          rounds, the systems interleaved in each (default 3)
  --seconds S         seconds per cycles row and per handover row (default 5)
  --levels L          lockers at a time, comma-separated (default 1,16,128)
  --holds N           locks held in the hold workload (default 10000)
  --hold-seconds S    seconds they are held (default 60)
  --systems IDS       systems, comma-separated (default all: ${SYSTEMS.map((s) => s.id).join(", ")})
  --workloads W       workloads, comma-separated (default all: ${WORKLOADS.join(", ")})
  --out DIR           where the JSON and the SVG go (default bench/peers/results)
  -h, --help          this text`;

interface Flags {
  rounds: number;
  seconds: number;
  levels: number[];
  holds: number;
  holdSeconds: number;
  systems: SystemDef[];
  workloads: Workload[];
  out: string;
}

function fail(message: string): never {
  console.error(`bench:peers: ${message}`);
  process.exit(2);
}

function parseFlags(): Flags {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        rounds: { type: "string", default: "3" },
        seconds: { type: "string", default: "5" },
        levels: { type: "string", default: "1,16,128" },
        holds: { type: "string", default: "10000" },
        "hold-seconds": { type: "string", default: "60" },
        systems: { type: "string" },
        workloads: { type: "string" },
        out: { type: "string", default: fileURLToPath(new URL("./results/", import.meta.url)) },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    fail(`${(err as Error).message}\n\n${USAGE}`);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const number = (name: string, text: string, min: number) => {
    const x = Number(text);
    if (!Number.isFinite(x) || x < min) fail(`--${name} must be a number of at least ${min}, got "${text}"`);
    return x;
  };
  const list = (text: string | undefined) => (text ?? "").split(",").map((x) => x.trim()).filter(Boolean);
  const ids = list(values.systems);
  for (const id of ids) if (!SYSTEMS.some((s) => s.id === id)) fail(`--systems: no system "${id}"; there are ${SYSTEMS.map((s) => s.id).join(", ")}`);
  const workloads = list(values.workloads) as Workload[];
  for (const w of workloads) if (!WORKLOADS.includes(w)) fail(`--workloads: no workload "${w}"; there are ${WORKLOADS.join(", ")}`);
  const levels = list(values.levels).map((l) => Math.round(number("levels", l, 1)));
  if (levels.length === 0) fail("--levels needs at least one number");
  return {
    rounds: Math.round(number("rounds", values.rounds!, 1)),
    seconds: number("seconds", values.seconds!, 0.5),
    levels,
    holds: Math.round(number("holds", values.holds!, 1)),
    holdSeconds: number("hold-seconds", values["hold-seconds"]!, 1),
    systems: ids.length ? SYSTEMS.filter((s) => ids.includes(s.id)) : SYSTEMS,
    workloads: workloads.length ? workloads : WORKLOADS,
    out: resolve(values.out!),
  };
}

const progress = (line: string) => console.error(`  [${new Date().toISOString().slice(11, 19)}] ${line}`);
const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** CPU seconds of each process, read now. */
type Cpu = Record<string, number>;

export interface CyclesRow {
  system: string;
  round: number;
  lockers: number;
  cycles: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  firstError?: string;
  /** CPU ms per cycle of each process: the services', and "client" (the worker). */
  cpuMsPerCycle: Record<string, number>;
}

export interface Results {
  date: string;
  flags: Omit<Flags, "systems" | "out"> & { systems: string[] };
  machine: { cores: number; cpu?: string; node: string; loadavg: number[] };
  versions: Record<string, string>;
  systems: { id: string; label: string; lang: string; servers: string[] }[];
  cycles: CyclesRow[];
  handover: { system: string; round: number; handovers: number; p50Ms: number; p99Ms: number; releaseP50Ms: number; errors: number; firstError?: string }[];
  crash: { system: string; round: number; ms: number }[];
  hold: { system: string; acquired: number; acquireSeconds: number; stillHeld: number; seconds: number; cpu: Record<string, number>; rssMb: Record<string, number>; firstError?: string }[];
  timeline: { system: string; writes: { how: string; accepted: boolean; error?: string }[]; believedHeld?: boolean }[];
  failures: string[];
}

async function main(): Promise<number> {
  const flags = parseFlags();
  const needs = new Set<ServiceName>(flags.systems.flatMap((s) => s.servers));
  console.log(
    `fencekeeper beside its peers: ${flags.systems.length} systems, ${flags.workloads.join(", ")}; ${flags.rounds} round(s), ${flags.seconds} s a row, ` +
      `lockers ${flags.levels.join("/")}, ${flags.holds.toLocaleString("en-US")} locks held ${flags.holdSeconds} s. ${cpus().length} cores, load ${loadavg().map((x) => x.toFixed(1)).join(" ")}.`,
  );
  const services = new Map<ServiceName, Service>();
  const stopAll = async () => {
    for (const s of [...services.values()].reverse()) await s.stop().catch(() => undefined);
  };
  process.once("SIGINT", () => void stopAll().finally(() => process.exit(130)));
  const results: Results = {
    date: new Date().toISOString(),
    flags: { ...flags, systems: flags.systems.map((s) => s.id) },
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadavg: loadavg() },
    versions: {},
    systems: flags.systems.map((s) => ({ id: s.id, label: s.label, lang: s.lang, servers: s.servers })),
    cycles: [],
    handover: [],
    crash: [],
    hold: [],
    timeline: [],
    failures: [],
  };
  try {
    progress(`starting ${[...needs].join(", ")}`);
    const etcd = await startEtcdService();
    services.set("etcd", etcd);
    if (needs.has("fencekeeper")) services.set("fencekeeper", await startFencekeeperService(etcd.endpoint));
    if (needs.has("redis")) services.set("redis", await startRedisService());
    if (needs.has("zookeeper")) services.set("zookeeper", await startZooKeeperService());
    for (const [n, s] of services) results.versions[n] = s.version;
    results.versions.node = process.version;
    Object.assign(results.versions, clientVersions());

    const runId = Date.now().toString(36);
    const address = (n: ServiceName) => services.get(n)?.address ?? "";
    const common = (s: SystemDef, tag: string) => [
      "--fk", address("fencekeeper"), "--etcd", address("etcd"), "--redis", address("redis"), "--zk", address("zookeeper"),
      "--prefix", `peers-${runId}-${s.id}-${tag}`,
    ];
    const spawnWorker = (s: SystemDef, workload: string, tag: string, extra: string[]) =>
      new Worker(`${s.id} ${workload}`, [...workerCommand(s), "--workload", workload, ...common(s, tag), ...extra]);
    const readAll = (w?: Worker): Cpu => {
      const cpu: Cpu = {};
      for (const [n, s] of services) cpu[n] = readProcess(s.pid)?.cpuSeconds ?? NaN;
      if (w) cpu.client = readProcess(w.pid)?.cpuSeconds ?? NaN;
      return cpu;
    };
    const attempt = async (what: string, f: () => Promise<void>) => {
      try {
        await f();
      } catch (err) {
        const message = (err as Error).message;
        results.failures.push(`${what}: ${message.split("\n")[0]}`);
        progress(`FAILED ${what}: ${message}`);
      }
    };
    // Each round runs the systems in another order, so that no system always follows the same one.
    const order = (round: number, of: SystemDef[]) => of.map((_, i) => of[(i + round) % of.length]);
    const taking = (w: Workload) => (flags.workloads.includes(w) ? flags.systems.filter((s) => s.workloads.includes(w)) : []);

    for (let round = 0; round < flags.rounds; round++) {
      // One worker a system a round, through every level in turn (a JVM or tsx starts once, not per level).
      for (const s of order(round, taking("cycles"))) {
        await attempt(`${s.id} cycles, round ${round + 1}`, async () => {
          const w = spawnWorker(s, "cycles", `c${round}`, ["--lockers", flags.levels.join(","), "--seconds", String(flags.seconds), "--ttl", String(CYCLE_TTL)]);
          try {
            for (const lockers of flags.levels) {
              progress(`round ${round + 1}: ${s.id}, ${lockers} locker(s)`);
              await w.next("ready");
              const before = readAll(w);
              w.send("go");
              const done = await w.next("done", (flags.seconds + 120) * 1000);
              const after = readAll(w);
              const cycles = Number(done.cycles);
              const cpuMsPerCycle: Record<string, number> = {};
              for (const k of Object.keys(before)) cpuMsPerCycle[k] = ((after[k] - before[k]) * 1000) / cycles;
              results.cycles.push({
                system: s.id, round, lockers, cycles, perSecond: Number(done.perSecond), p50Ms: Number(done.p50Ms), p99Ms: Number(done.p99Ms),
                errors: Number(done.errors), firstError: (done.firstError as string) || undefined, cpuMsPerCycle,
              });
              if (Number(done.errors) > 0) progress(`  ${done.errors} errors; first: ${done.firstError}`);
            }
          } finally {
            await w.close();
          }
        });
      }
      for (const s of order(round, taking("handover"))) {
        await attempt(`${s.id} handover, round ${round + 1}`, async () => {
          progress(`round ${round + 1}: ${s.id}, handover`);
          const w = spawnWorker(s, "handover", `h${round}`, ["--seconds", String(flags.seconds), "--ttl", String(CYCLE_TTL)]);
          try {
            await w.next("ready");
            w.send("go");
            const d = await w.next("done", (flags.seconds + 300) * 1000);
            results.handover.push({
              system: s.id, round, handovers: Number(d.handovers), p50Ms: Number(d.p50Ms), p99Ms: Number(d.p99Ms), releaseP50Ms: Number(d.releaseP50Ms),
              errors: Number(d.errors), firstError: (d.firstError as string) || undefined,
            });
          } finally {
            await w.close();
          }
        });
      }
      for (const s of order(round, taking("crash"))) {
        await attempt(`${s.id} crash, round ${round + 1}`, async () => {
          progress(`round ${round + 1}: ${s.id}, crash to next holder (TTL ${CRASH_TTL} s)`);
          const extra = ["--ttl", String(CRASH_TTL)];
          const holder = spawnWorker(s, "crash-holder", `k${round}`, extra);
          let waiter: Worker | undefined;
          try {
            await holder.next("held");
            waiter = spawnWorker(s, "crash-waiter", `k${round}`, extra);
            await waiter.next("waiting");
            await sleep(500); // the waiter's request reaches the server (or its first poll does)
            const killedAt = performance.now();
            await holder.kill();
            await waiter.next("granted", 60_000);
            results.crash.push({ system: s.id, round, ms: waiter.arrivals.get("granted")! - killedAt });
          } finally {
            await holder.kill();
            await waiter?.close();
          }
        });
      }
    }

    for (const s of taking("timeline")) {
      await attempt(`${s.id} timeline`, async () => {
        progress(`${s.id}: the timeline (a holder paused past its ${CRASH_TTL} s lease writes)`);
        const extra = ["--ttl", String(CRASH_TTL)];
        const holder = spawnWorker(s, "timeline-holder", "t", extra);
        let other: Worker | undefined;
        try {
          await holder.next("held");
          holder.signal("SIGSTOP"); // the pause: a GC, a swap storm, a VM migration
          other = spawnWorker(s, "timeline-other", "t", extra);
          await other.next("done", 60_000); // granted once the paused holder's lease ran out, and wrote
          holder.signal("SIGCONT");
          holder.send("write");
          const d = await holder.next("done", 60_000);
          results.timeline.push({ system: s.id, writes: d.writes as Results["timeline"][0]["writes"], believedHeld: d.believedHeld as boolean | undefined });
          other.send("release");
        } finally {
          holder.signal("SIGCONT");
          await other?.close();
          await holder.close();
        }
      });
    }

    for (const s of taking("hold")) {
      await attempt(`${s.id} hold`, async () => {
        progress(`${s.id}: acquiring ${flags.holds} locks, then holding them ${flags.holdSeconds} s`);
        const w = spawnWorker(s, "hold", "l", ["--count", String(flags.holds), "--ttl", String(CYCLE_TTL)]);
        const samplers = new Map<string, Sampler>();
        try {
          const ready = await w.next("ready", 900_000);
          const before = readAll(w);
          const started = performance.now();
          for (const [n, svc] of services) samplers.set(n, new Sampler(svc.pid));
          samplers.set("client", new Sampler(w.pid));
          w.send("go");
          await sleep(flags.holdSeconds * 1000);
          const after = readAll(w);
          const seconds = (performance.now() - started) / 1000;
          w.send("stop");
          const d = await w.next("done", 120_000);
          const cpu: Record<string, number> = {};
          const rssMb: Record<string, number> = {};
          for (const k of Object.keys(before)) cpu[k] = (after[k] - before[k]) / seconds;
          for (const [k, sm] of samplers) rssMb[k] = sm.stats().rssMaxMb;
          results.hold.push({
            system: s.id, acquired: Number(ready.acquired), acquireSeconds: Number(ready.acquireSeconds), stillHeld: Number(d.stillHeld), seconds, cpu, rssMb,
            firstError: (ready.firstError as string) || undefined,
          });
        } finally {
          for (const sm of samplers.values()) sm.stop();
          await w.close(60_000);
        }
      });
    }
  } catch (err) {
    results.failures.push(`setup: ${(err as Error).message.split("\n")[0]}`);
    console.error(`bench:peers: ${(err as Error).message}`);
  } finally {
    progress("stopping the servers");
    await stopAll();
  }

  report(results, flags);
  mkdirSync(flags.out, { recursive: true });
  const stamp = results.date.replace(/[:.]/g, "-");
  const json = resolve(flags.out, `${stamp}.json`);
  writeFileSync(json, JSON.stringify(results, null, 2) + "\n");
  const svg = resolve(flags.out, `${stamp}.svg`);
  writeFileSync(svg, chart(results));
  console.log(`\nJSON: ${json}\nchart: ${svg}`);
  return results.failures.length ? 1 : 0;
}

function report(r: Results, flags: Flags): void {
  const label = (id: string) => r.systems.find((s) => s.id === id)?.label ?? id;
  const serversOf = (id: string) => r.systems.find((s) => s.id === id)?.servers ?? [];
  const cyc = (id: string, lockers: number) => r.cycles.filter((c) => c.system === id && c.lockers === lockers);
  const perSecond = (id: string, lockers: number) => median(cyc(id, lockers).map((c) => c.perSecond));
  const cpuAt = (id: string, lockers: number, who: string) => median(cyc(id, lockers).map((c) => c.cpuMsPerCycle[who]));
  const cpuLevel = flags.levels.includes(16) ? 16 : flags.levels[flags.levels.length - 1];
  const n = (x: number, d = 0) => (Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "—");
  const msCell = (x: number) => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x.toFixed(1)) : "—");
  const ids = r.systems.map((s) => s.id);

  console.log(`\n## Lock cycles, handover, crash (medians of ${flags.rounds} round(s))\n`);
  console.log(
    `| system | ${flags.levels.map((l) => `cycles/s, ${l}`).join(" | ")} | handover p50 / p99 ms (release p50) | crash → next holder, TTL ${CRASH_TTL} s | server CPU per cycle at ${cpuLevel} | client CPU per cycle at ${cpuLevel} |`,
  );
  console.log(`| --- | ${flags.levels.map(() => "---:").join(" | ")} | --- | ---: | ---: | ---: |`);
  for (const id of ids) {
    const h = r.handover.filter((x) => x.system === id);
    const crash = median(r.crash.filter((x) => x.system === id).map((x) => x.ms));
    const parts = serversOf(id).map((s) => [s, cpuAt(id, cpuLevel, s)] as const);
    const serverCpu = parts.reduce((a, [, x]) => a + x, 0);
    const breakdown = parts.length > 1 ? ` (${parts.map(([s, x]) => `${s} ${msCell(x)}`).join(" + ")})` : ` (${parts[0]?.[0] ?? ""})`;
    console.log(
      `| ${label(id)} | ${flags.levels.map((l) => n(perSecond(id, l))).join(" | ")} | ` +
        (h.length ? `${msCell(median(h.map((x) => x.p50Ms)))} / ${msCell(median(h.map((x) => x.p99Ms)))} (${msCell(median(h.map((x) => x.releaseP50Ms)))})` : "—") +
        ` | ${Number.isFinite(crash) ? `${n(crash)} ms` : "—"} | ${Number.isFinite(serverCpu) ? `${msCell(serverCpu)} ms${breakdown}` : "—"} | ${Number.isFinite(cpuAt(id, cpuLevel, "client")) ? `${msCell(cpuAt(id, cpuLevel, "client"))} ms` : "—"} |`,
    );
  }

  const fks = ids.filter((id) => id.startsWith("fk-go"));
  const peers = ids.filter((id) => !id.startsWith("fk-"));
  if (fks.length && peers.length) {
    console.log(`\n## Ratios: fencekeeper's cycles/s ÷ the peer's (at least 1x: fencekeeper as fast or faster)\n`);
    console.log(`| peer | ${fks.flatMap((f) => flags.levels.map((l) => `${f}, ${l}`)).join(" | ")} |`);
    console.log(`| --- | ${fks.flatMap(() => flags.levels.map(() => "---:")).join(" | ")} |`);
    for (const p of peers) {
      console.log(`| ${label(p)} | ${fks.flatMap((f) => flags.levels.map((l) => ratio(perSecond(f, l) / perSecond(p, l)))).join(" | ")} |`);
    }
  }

  if (r.timeline.length) {
    console.log(`\n## The timeline: a holder paused past its ${CRASH_TTL} s lease writes after the next holder wrote\n`);
    console.log(`| system | write | the store |`);
    console.log(`| --- | --- | --- |`);
    for (const t of r.timeline) for (const w of t.writes) console.log(`| ${label(t.system)} | ${w.how} | ${w.accepted ? "**accepted** (the stale write overwrote the next holder's)" : `refused: ${w.error ?? ""}`} |`);
  }

  if (r.hold.length) {
    const who = ["client", "fencekeeper", "etcd", "zookeeper", "redis"];
    console.log(`\n## ${flags.holds.toLocaleString("en-US")} locks held ${flags.holdSeconds} s: CPU (% of a core) and peak RSS (MB) of each process\n`);
    console.log(`| system | acquired (s) | still held | ${who.map((w) => `${w} CPU / RSS`).join(" | ")} |`);
    console.log(`| --- | ---: | ---: | ${who.map(() => "---:").join(" | ")} |`);
    for (const h of r.hold) {
      console.log(
        `| ${label(h.system)} | ${n(h.acquired)} (${n(h.acquireSeconds, 1)}) | ${n(h.stillHeld)} | ` +
          who.map((w) => (w in h.cpu ? `${n(h.cpu[w] * 100, 1)}% / ${n(h.rssMb[w])}` : "—")).join(" | ") + " |",
      );
    }
    console.log(`\n(every server runs through the whole hold: a server a system does not use shows its idle cost)`);
  }

  if (r.failures.length) {
    console.log(`\n## Failures\n`);
    for (const f of r.failures) console.log(`- ${f}`);
  }
}

/** The peers' client libraries, as the workers' go.mod and pom.xml pin them. */
function clientVersions(): Record<string, string> {
  const read = (f: string) => {
    try {
      return readFileSync(fileURLToPath(new URL(f, import.meta.url)), "utf8");
    } catch {
      return "";
    }
  };
  const goMod = read("./go/go.mod");
  const pom = read("./java/pom.xml");
  const go = (module: string) => new RegExp(`${module.replace(/[.]/g, "\\.")} (v\\S+)`).exec(goMod)?.[1] ?? "?";
  return {
    "go.etcd.io/etcd/client/v3": go("go.etcd.io/etcd/client/v3"),
    "github.com/go-redsync/redsync/v4": go("github.com/go-redsync/redsync/v4"),
    "github.com/redis/go-redis/v9": go("github.com/redis/go-redis/v9"),
    "org.apache.curator:curator-recipes": /<curator\.version>([^<]+)</.exec(pom)?.[1] ?? "?",
  };
}

const ratio = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}x` : "—");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
process.exit(await main());
