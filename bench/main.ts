// The benchmark of issue 9: fencekeeper side by side with the hand-written etcd3 code it replaces, in one
// run on one etcd, as ratios. Starts etcd and a server, runs the chosen scenario families, prints a table
// per measurement and a summary of issue 9's targets, and writes everything as JSON to bench/results/.
//   npm run bench                                   everything, with defaults (about 8 minutes)
//   npm run bench -- --only put --seconds 3         a part
//   npm run bench -- --only leases --leases 10000 --hold 300     the target run of the leases
// Absolute numbers move with the machine and its neighbours; ratios measured in one run do not as much.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startEtcd, type TestEtcd } from "../test/harness/etcd.js";
import { startServer, type TestServer } from "../test/harness/server.js";
import { acquire } from "./acquire.js";
import { coalesce } from "./coalesce.js";
import { election } from "./election.js";
import { floor } from "./floor.js";
import { keepalive } from "./keepalive.js";
import { leases } from "./leases.js";
import { preempt } from "./preempt.js";
import { scale } from "./scale.js";
import { bounded } from "./measure.js";
import { topEntries } from "./profile-top.js";
import { latency, put } from "./put.js";
import type { Check, Context, Flags, Scenario } from "./scenario.js";

const SCENARIOS: Scenario[] = [put, latency, floor, coalesce, acquire, leases, keepalive, election, preempt, scale];
/** Run only when named with --only: it starts a cluster of its own and runs for many minutes. */
const BY_NAME_ONLY = new Set([scale.name]);
const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));
const PROFILER = fileURLToPath(new URL("./cpu-profile.mjs", import.meta.url));

const USAGE = `usage: npm run bench -- [options]

  --seconds S        seconds per measured row (default 5, or BENCH_SECONDS)
  --only NAMES       scenario families to run, comma-separated or repeated (default: all)
  --leases N         leases held in the leases scenario (default 10000)
  --hold H           seconds the leases are held (default 60; the target run is 300)
  --sessions         hold the leases on sessions, once the SDK has them (otherwise says so)
  --held N[,N...]    resources held in the scale scenario, each size in turn (default 100000; run only with --only scale)
  --per-session N    resources a session holds in the scale scenario (default 500)
  --profile DIR      each server started writes a CPU profile into DIR when it exits (as node --cpu-prof)
  --server-arg=ARG   passed to the server, repeated for each (e.g. --server-arg=--max-bytes-per-resource --server-arg=0)
  -h, --help         this text

scenarios:
${SCENARIOS.map((s) => `  ${s.name.padEnd(9)} ${s.about}`).join("\n")}`;

function parseFlags(): { flags: Flags; only: Scenario[] } {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        seconds: { type: "string", default: process.env.BENCH_SECONDS ?? "5" },
        only: { type: "string", multiple: true },
        leases: { type: "string", default: "10000" },
        hold: { type: "string", default: "60" },
        sessions: { type: "boolean", default: false },
        held: { type: "string", default: "100000" },
        "per-session": { type: "string", default: "500" },
        profile: { type: "string" },
        "server-arg": { type: "string", multiple: true },
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
  const names = (values.only ?? []).flatMap((o) => o.split(",")).map((n) => n.trim()).filter(Boolean);
  for (const n of names) {
    if (!SCENARIOS.some((s) => s.name === n)) fail(`--only: no scenario "${n}"; there are ${SCENARIOS.map((s) => s.name).join(", ")}`);
  }
  return {
    flags: {
      seconds: number("seconds", values.seconds!, 0.5),
      leases: Math.round(number("leases", values.leases!, 1)),
      hold: number("hold", values.hold!, 1),
      sessions: values.sessions!,
      held: values.held!.split(",").map((n) => Math.round(number("held", n.trim(), 1))),
      perSession: Math.round(number("per-session", values["per-session"]!, 1)),
      profile: values.profile !== undefined ? resolve(values.profile) : undefined,
    },
    only: names.length ? SCENARIOS.filter((s) => names.includes(s.name)) : SCENARIOS.filter((s) => !BY_NAME_ONLY.has(s.name)),
  };
}

function fail(message: string): never {
  console.error(`bench: ${message}`);
  process.exit(2);
}

async function main(): Promise<number> {
  const { flags, only } = parseFlags();
  const estimate = only.reduce((t, s) => t + s.estimate(flags), 0);
  console.log(
    `fencekeeper benchmark: ${only.map((s) => s.name).join(", ")}; ${flags.seconds} s per row` +
      (only.includes(leases) ? `, ${flags.leases.toLocaleString("en-US")} leases held ${flags.hold} s` : "") +
      `; about ${Math.ceil(estimate / 60)} min. ${cpus().length} cores, one etcd node, node ${process.version}.`,
  );
  const progress = (line: string) => console.error(`  [${new Date().toISOString().slice(11, 19)}] ${line}`);
  if (flags.profile) mkdirSync(flags.profile, { recursive: true });
  const profilesBefore = new Set(flags.profile ? readdirSync(flags.profile) : []);

  const serverArgs = parseArgs({ options: { "server-arg": { type: "string", multiple: true } }, strict: false }).values["server-arg"] as string[] | undefined ?? [];
  progress(`starting etcd and the server${serverArgs.length ? ` (${serverArgs.join(" ")})` : ""}`);
  const etcd: TestEtcd = await startEtcd();
  const start = () =>
    startServer({
      etcd: etcd.endpoint,
      // Info, not the harness's debug: a log line per call would be measured too.
      args: ["--log-level", "info", ...serverArgs],
      // --cpu-prof itself is refused in NODE_OPTIONS by Node 20; cpu-profile.mjs does the same from inside.
      env: flags.profile ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${PROFILER}`.trim(), FENCEKEEPER_BENCH_PROFILE_DIR: flags.profile } : undefined,
    });
  let server: TestServer = await start();
  const cleanup = async () => {
    await bounded(server.stop(), 15_000); // SIGTERM: a graceful exit writes the CPU profile
    await bounded(etcd.destroy(), 15_000);
  };
  process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));

  const ctx: Context = {
    flags,
    etcd,
    server: () => server,
    async freshServer() {
      progress("restarting the server, so that earlier load is not in its heap");
      await server.stop();
      server = await start();
      return server;
    },
    runId: Date.now().toString(36),
    progress,
  };

  const results: Record<string, unknown> = {};
  const checks: Check[] = [];
  const failures: string[] = [];
  try {
    for (const scenario of only) {
      // Each scenario bounds its own steps; this only keeps a bug from hanging the whole run.
      const limitMs = Math.max(3 * scenario.estimate(flags), scenario.estimate(flags) + 300) * 1000;
      let outcome;
      try {
        const run = scenario.run(ctx);
        if (!(await bounded(run, limitMs))) throw new Error(`did not finish within ${Math.round(limitMs / 1000)} s`);
        outcome = await run;
      } catch (err) {
        const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
        failures.push(`${scenario.name}: ${message.split("\n")[0]}`);
        console.log(`\nscenario ${scenario.name} failed: ${message}`);
        continue;
      }
      results[scenario.name] = outcome.json;
      checks.push(...outcome.checks);
    }
  } finally {
    progress("stopping the server and etcd");
    await cleanup();
  }

  summarize(checks, failures);
  const profiles = flags.profile ? readdirSync(flags.profile).filter((f) => !profilesBefore.has(f)) : [];
  if (flags.profile) {
    if (profiles.length === 0) console.log("\nno CPU profile of the server was written");
    for (const p of profiles) {
      const { busySamples, entries } = topEntries(resolve(flags.profile, p));
      console.log(`\nCPU profile of a server: ${resolve(flags.profile, p)}\n  top self time, share of ${busySamples.toLocaleString("en-US")} busy samples (1 ms each):`);
      for (const e of entries) console.log(`  ${(e.share * 100).toFixed(1).padStart(5)}%  ${e.name}`);
    }
  }

  mkdirSync(RESULTS, { recursive: true });
  const date = new Date().toISOString();
  const json = {
    date,
    flags,
    scenarios: only.map((s) => s.name),
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    results,
    checks,
    failures,
    ...(flags.profile ? { profiles } : {}),
  };
  const file = resolve(RESULTS, `bench-${date.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, JSON.stringify(json, (_, v) => (typeof v === "bigint" ? v.toString() : v), 2) + "\n");
  writeFileSync(resolve(RESULTS, "latest.json"), JSON.stringify(json, (_, v) => (typeof v === "bigint" ? v.toString() : v), 2) + "\n");
  console.log(`\nJSON: ${file} (and bench/results/latest.json)`);
  return failures.length ? 1 : 0;
}

function summarize(checks: Check[], failures: string[]): void {
  console.log("\ntargets (each named by its issue and item: 41.2 is issue 41's second)");
  // In the issues' order: scenario families report them in the order they run.
  const order = (c: Check) => parseFloat(c.target);
  checks = [...checks].sort((a, b) => order(a) - order(b));
  const width = Math.max(...checks.map((c) => c.status.length), 8);
  for (const c of checks) console.log(`  ${c.status.padEnd(width)}  ${c.target}\n  ${"".padEnd(width)}    ${c.detail}`);
  if (checks.length === 0) console.log("  none measured");
  for (const f of failures) console.log(`  FAILED  scenario ${f}`);
}

// Clients of etcd and of the server may keep handles open; the run is over.
process.exit(await main());
