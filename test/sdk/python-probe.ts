// The Python library's test program (sdk/python/tests/probe.py) as a process, on the library as
// scripts/setup-polyglot.sh installed it in .conformance/venv: its `hold` prints one JSON line per event
// and takes commands on stdin; its `scenario` runs the conformance scenario through the library.
import { existsSync, readFileSync } from "node:fs";
import { ProbeProcess, ROOT, runToEnd } from "./probe-process.js";
import type { ReasonTypes } from "./reasons-table.js";
import type { ElectOptions, HoldOptions, ScenarioOptions, ScenarioRun } from "./sdk-suite.js";

const PYTHON = `${ROOT}.conformance/venv/bin/python`;
const PROBE = `${ROOT}sdk/python/tests/probe.py`;

/** Fails, with what to do, when setup-polyglot.sh has not installed the library. */
export function assertInstalled(): void {
  const missing = `${ROOT}.conformance/sdk-python.missing`;
  if (existsSync(missing)) throw new Error(`the Python library is not installed: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(`${ROOT}.conformance/sdk-python.stamp`) || !existsSync(PYTHON)) {
    throw new Error("the Python library is not installed: run bash scripts/setup-polyglot.sh (npm test runs it)");
  }
}

/** Runs `probe.py scenario` to its end. */
export async function runScenario(server: string, resource: string, o: ScenarioOptions = {}): Promise<ScenarioRun> {
  assertInstalled();
  const flags = [
    ...(o.sessions ? ["--sessions"] : []),
    ...(o.tls ? ["--tls-ca", o.tls.ca, "--tls-cert", o.tls.cert, "--tls-key", o.tls.key] : []),
    ...(o.bearer ? ["--bearer", o.bearer] : []),
  ];
  const r = await runToEnd(PYTHON, [PROBE, "scenario", "--server", server, "--resource", resource, ...flags]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** Runs the library's unit tests (sdk/python/tests/test_*.py, unittest) to their end. */
export async function runUnitTests(): Promise<ScenarioRun> {
  assertInstalled();
  const r = await runToEnd(PYTHON, ["-m", "unittest", "discover", "-s", `${ROOT}sdk/python/tests`, "-p", "test_*.py"]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** `probe.py reasons`: the error class the library raises for each reason of its generated enum. */
export async function reasons(): Promise<ReasonTypes> {
  assertInstalled();
  const r = await runToEnd(PYTHON, [PROBE, "reasons"]);
  if (r.code !== 0) throw new Error(`probe.py reasons failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/**
 * sdk/python/consumer-test/user.py, a user's ten-line program, run with the venv into which
 * setup-polyglot.sh installed the built wheels with pip: acquires resource on server, writes, releases.
 */
export async function runConsumer(server: string, resource: string): Promise<ScenarioRun> {
  assertInstalled();
  const python = `${ROOT}.conformance/venv-user/bin/python`;
  if (!existsSync(python)) throw new Error("the Python wheels are not installed: run bash scripts/setup-polyglot.sh (npm test runs it)");
  const r = await runToEnd(python, [`${ROOT}sdk/python/consumer-test/user.py`, server, resource]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** `probe.py hold`: holds one lease (through fencekeeper.aio with `asyncio`) until killed. */
export function hold(o: HoldOptions): ProbeProcess {
  assertInstalled();
  const args = [PROBE, "hold", "--server", o.servers.join(","), "--resource", o.resource, "--ttl", String(o.ttlMs / 1000), ...(o.shared ? ["--shared"] : []), ...(o.preempt ? ["--preempt"] : [])];
  if (o.lockDelayMs) args.push("--lock-delay", String(o.lockDelayMs / 1000));
  if (o.asyncio) args.push("--asyncio");
  if (o.scoped) args.push("--scoped");
  if (o.sessions) args.push("--sessions");
  return new ProbeProcess("the Python holder", PYTHON, args);
}

/** `probe.py elect`: a Python process running client.lead() (elect.py). */
export function elect(o: ElectOptions): ProbeProcess {
  assertInstalled();
  const args = [PROBE, "elect", "--server", o.servers.join(","), "--resource", o.resource, "--ttl", String(o.ttlMs / 1000), "--holder", o.holder, "--value", o.value, "--linger", String((o.lingerMs ?? 0) / 1000)];
  return new ProbeProcess("the Python campaigner", PYTHON, args);
}

/** `probe.py elect-aio`: the election and semaphore helpers of fencekeeper.aio, to its end. */
export async function runElectAio(server: string, resource: string): Promise<ScenarioRun> {
  assertInstalled();
  const r = await runToEnd(PYTHON, [PROBE, "elect-aio", "--server", server, "--resource", resource]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** `probe.py options`: AcquireOptions through lease(), semaphore() and campaign(), threads and fencekeeper.aio (options.py), to its end. */
export async function runOptions(server: string, resource: string): Promise<ScenarioRun> {
  assertInstalled();
  const r = await runToEnd(PYTHON, [PROBE, "options", "--server", server, "--resource", resource]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** `probe.py cancel-race`: waiting acquires cancelled as their turn comes, then the resource must be free (cancel_race.py). */
export async function runCancelRace(server: string, resource: string, o: { rounds: number; waiters: number; sessions?: boolean }): Promise<ScenarioRun> {
  assertInstalled();
  const args = [PROBE, "cancel-race", "--server", server, "--resource", resource, "--rounds", String(o.rounds), "--waiters", String(o.waiters), ...(o.sessions ? ["--sessions"] : [])];
  const r = await runToEnd(PYTHON, args);
  return { code: r.code, output: r.stdout + r.stderr };
}
