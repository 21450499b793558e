// The Java client library's probe (sdk/java/probe, built by scripts/setup-polyglot.sh) as a process: its
// `scenario` or `semantics` run to the end, or its `hold` driven line by line: JSON events on stdout,
// commands on stdin.
import { existsSync, readFileSync } from "node:fs";
import { ProbeProcess, ROOT, runToEnd } from "./probe-process.js";
import type { ReasonTypes } from "./reasons-table.js";
import type { ElectOptions, HoldOptions, ScenarioOptions, ScenarioRun } from "./sdk-suite.js";

const JAR = "sdk/java/probe/target/fk-sdk-probe.jar";

/** Fails, with what to do, when setup-polyglot.sh has not built the probe. */
export function assertProbeBuilt(): void {
  const missing = `${ROOT}/.conformance/java-sdk.missing`;
  if (existsSync(missing)) throw new Error(`the Java SDK is not built: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(`${ROOT}/${JAR}`)) throw new Error("the Java SDK is not built: run bash scripts/setup-polyglot.sh (npm test runs it)");
}

/** Runs `scenario` or `semantics` to its end. */
export async function runChecks(command: "scenario" | "semantics", server: string, resource: string, o: ScenarioOptions = {}): Promise<ScenarioRun> {
  assertProbeBuilt();
  const flags = [
    ...(o.sessions ? ["--sessions", "true"] : []),
    ...(o.tls ? ["--tls-ca", o.tls.ca, "--tls-cert", o.tls.cert, "--tls-key", o.tls.key] : []),
    ...(o.bearer ? ["--bearer", o.bearer] : []),
  ];
  const r = await runToEnd("java", ["-jar", JAR, command, "--server", server, "--resource", resource, ...flags]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** The probe's `reasons`: the exception class the library throws for each reason of its generated enum. */
export async function reasons(): Promise<ReasonTypes> {
  assertProbeBuilt();
  const r = await runToEnd("java", ["-jar", JAR, "reasons"]);
  if (r.code !== 0) throw new Error(`the Java probe's reasons failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** The probe's `api`: the library's public members whose signatures name a generated protobuf class (deprecated ones aside). */
export async function generatedTypesExposed(): Promise<string[]> {
  assertProbeBuilt();
  const r = await runToEnd("java", ["-jar", JAR, "api"]);
  if (r.code !== 0) throw new Error(`the Java probe's api failed:\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout).generated_types_exposed;
}

/**
 * The ten-line program of sdk/java/consumer-test, a separate Maven project built against the library's jar
 * as installed into a throwaway local repository: acquires resource on server, writes, releases.
 */
export async function runConsumer(server: string, resource: string): Promise<ScenarioRun> {
  assertProbeBuilt();
  const jar = `${ROOT}/sdk/java/consumer-test/target/fk-user.jar`;
  if (!existsSync(jar)) throw new Error("the Java user project is not built: run bash scripts/setup-polyglot.sh (npm test runs it)");
  const r = await runToEnd("java", ["-jar", jar, server, resource]);
  return { code: r.code, output: r.stdout + r.stderr };
}

/** A `hold` process: a lease held through the Java library, reporting what it sees. */
export function hold(o: HoldOptions): ProbeProcess {
  assertProbeBuilt();
  const args = ["-jar", JAR, "hold", "--server", o.servers.join(","), "--resource", o.resource, "--ttl-ms", String(o.ttlMs)];
  if (o.writeEveryMs) args.push("--write-every-ms", String(o.writeEveryMs));
  if (o.sessions) args.push("--sessions", "true");
  if (o.lockDelayMs) args.push("--lock-delay-ms", String(o.lockDelayMs));
  if (o.shared) args.push("--shared", "true");
  if (o.preempt) args.push("--preempt", "true");
  return new ProbeProcess("the Java holder", "java", args);
}

/** An `elect` process: the Java library's lead() on a resource (Elect.java). */
export function elect(o: ElectOptions): ProbeProcess {
  assertProbeBuilt();
  const args = ["-jar", JAR, "elect", "--server", o.servers.join(","), "--resource", o.resource, "--ttl-ms", String(o.ttlMs), "--holder", o.holder, "--value", o.value, "--linger-ms", String(o.lingerMs ?? 0)];
  return new ProbeProcess("the Java campaigner", "java", args);
}

/** The probe's `cancel-race`: waiting acquires cancelled as their turn comes, then the resource must be free (CancelRace.java). */
export async function runCancelRace(server: string, resource: string, o: { rounds: number; waiters: number; sessions?: boolean }): Promise<ScenarioRun> {
  assertProbeBuilt();
  const args = ["cancel-race", "--server", server, "--resource", resource, "--rounds", String(o.rounds), "--waiters", String(o.waiters), ...(o.sessions ? ["--sessions", "true"] : [])];
  const r = await runToEnd("java", ["-jar", JAR, ...args]);
  return { code: r.code, output: r.stdout + r.stderr };
}
