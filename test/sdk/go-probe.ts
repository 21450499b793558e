// The Go client's test program (sdk/go/cmd/fk-sdk-probe, built by scripts/setup-polyglot.sh) as a
// process: its `hold` prints one JSON line per event and takes commands on stdin; its `scenario` runs
// the conformance scenario through the library.
import { existsSync, readFileSync } from "node:fs";
import { ProbeProcess, ROOT, runToEnd } from "./probe-process.js";
import type { ReasonTypes } from "./reasons-table.js";
import type { ElectOptions, HoldOptions, ScenarioOptions, ScenarioRun } from "./sdk-suite.js";

const PROBE = `${ROOT}/.conformance/sdk-go/fk-sdk-probe`;

/** Fails, with what to do, when setup-polyglot.sh has not built the probe. */
export function assertProbeBuilt(): void {
  const missing = `${ROOT}/.conformance/sdk-go.missing`;
  if (existsSync(missing)) throw new Error(`the Go client library is not built: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(PROBE)) throw new Error("the Go client library is not built: run bash scripts/setup-polyglot.sh (npm test runs it)");
}

/** Runs `fk-sdk-probe scenario` to its end. */
export async function runScenario(server: string, resource: string, o: ScenarioOptions = {}): Promise<ScenarioRun> {
  assertProbeBuilt();
  const flags = [...(o.tls ? ["--tls-ca", o.tls.ca, "--tls-cert", o.tls.cert, "--tls-key", o.tls.key] : []), ...(o.bearer ? ["--bearer", o.bearer] : [])];
  const r = await runToEnd(PROBE, ["scenario", "--server", server, "--resource", resource, ...flags]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** `fk-sdk-probe reasons`: the error type the library returns for each reason of its generated enum. */
export async function reasons(): Promise<ReasonTypes> {
  assertProbeBuilt();
  const r = await runToEnd(PROBE, ["reasons"]);
  if (r.code !== 0) throw new Error(`fk-sdk-probe reasons failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * The ten-line program of sdk/go/consumer-test, a module of its own that requires the library by its
 * module path: acquires resource on server, writes, releases.
 */
export async function runConsumer(server: string, resource: string): Promise<ScenarioRun> {
  assertProbeBuilt();
  const r = await runToEnd(`${ROOT}/.conformance/sdk-go/fk-user`, [server, resource]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** `fk-sdk-probe hold`: a Go process holding a lease. */
export function hold(o: HoldOptions): ProbeProcess {
  assertProbeBuilt();
  const args = [
    "hold",
    "--server",
    o.servers.join(","),
    "--resource",
    o.resource,
    "--ttl",
    `${o.ttlMs}ms`,
    ...(o.sessions ? ["--sessions"] : []),
    ...(o.shared ? ["--shared"] : []),
    ...(o.preempt ? ["--preempt"] : []),
    ...(o.lockDelayMs ? ["--lock-delay", `${o.lockDelayMs}ms`] : []),
    ...(o.holder ? ["--holder", o.holder] : []),
    ...(o.acquireTimeoutMs ? ["--acquire-timeout", `${o.acquireTimeoutMs}ms`] : []),
  ];
  return new ProbeProcess("the Go holder", PROBE, args);
}

/** `fk-sdk-probe elect`: a Go process running Lead. */
export function elect(o: ElectOptions): ProbeProcess {
  assertProbeBuilt();
  const args = ["elect", "--server", o.servers.join(","), "--resource", o.resource, "--ttl", `${o.ttlMs}ms`, "--holder", o.holder, "--value", o.value, "--linger", `${o.lingerMs ?? 0}ms`];
  return new ProbeProcess("the Go campaigner", PROBE, args);
}

/** `fk-sdk-probe cancel-race`: waiting acquires cancelled as their turn comes, then the resource must be free (cancel_race.go). */
export async function runCancelRace(server: string, resource: string, o: { rounds: number; waiters: number; sessions?: boolean }): Promise<ScenarioRun> {
  assertProbeBuilt();
  const args = ["cancel-race", "--server", server, "--resource", resource, "--rounds", String(o.rounds), "--waiters", String(o.waiters), ...(o.sessions ? ["--sessions"] : [])];
  const r = await runToEnd(PROBE, args);
  return { code: r.code, output: r.stdout + r.stderr };
}
