// The TypeScript SDK's test program (test/sdk/typescript/probe.ts, over client/) as a process, run by
// node (test/harness/programs.ts) as the other drivers run their languages' probes: its `hold` prints one JSON line per
// event and takes commands on stdin; its `scenario` runs the conformance scenario through the SDK.
import { ProbeProcess, ROOT, runToEnd } from "./probe-process.js";
import { nodeProgram } from "../harness/programs.js";
import type { ReasonTypes } from "./reasons-table.js";
import type { ElectOptions, HoldOptions, ScenarioOptions, ScenarioRun } from "./sdk-suite.js";

const NODE = nodeProgram(`${ROOT}test/sdk/typescript/probe.ts`);

/** Runs `probe.ts scenario` to its end. */
export async function runScenario(server: string, resource: string, o: ScenarioOptions = {}): Promise<ScenarioRun> {
  const flags = [...(o.sessions ? ["--sessions"] : []), ...(o.tls ? ["--tls-ca", o.tls.ca, "--tls-cert", o.tls.cert, "--tls-key", o.tls.key] : []), ...(o.bearer ? ["--bearer", o.bearer] : [])];
  const r = await runToEnd(NODE[0], [...NODE.slice(1), "scenario", "--server", server, "--resource", resource, ...flags]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** `probe.ts reasons`: the error class the SDK raises for each reason of the generated enum. */
export async function reasons(): Promise<ReasonTypes> {
  const r = await runToEnd(NODE[0], [...NODE.slice(1), "reasons"]);
  if (r.code !== 0) throw new Error(`probe.ts reasons failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** `probe.ts hold`: a node process holding a lease through the SDK. */
export function hold(o: HoldOptions): ProbeProcess {
  const args = [
    ...NODE.slice(1),
    "hold",
    "--server",
    o.servers.join(","),
    "--resource",
    o.resource,
    "--ttl",
    String(o.ttlMs),
    ...(o.sessions ? ["--sessions"] : []),
    ...(o.shared ? ["--shared"] : []),
    ...(o.preempt ? ["--preempt"] : []),
    ...(o.lockDelayMs ? ["--lock-delay", String(o.lockDelayMs)] : []),
    ...(o.holder ? ["--holder", o.holder] : []),
  ];
  return new ProbeProcess("the TypeScript holder", NODE[0], args);
}

/** `probe.ts elect`: a node process running the SDK's lead() (elect.ts). */
export function elect(o: ElectOptions): ProbeProcess {
  const args = [...NODE.slice(1), "elect", "--server", o.servers.join(","), "--resource", o.resource, "--ttl", String(o.ttlMs), "--holder", o.holder, "--value", o.value, "--linger", String(o.lingerMs ?? 0)];
  return new ProbeProcess("the TypeScript campaigner", NODE[0], args);
}
