// The Python library's test program (sdk/python/tests/probe.py) as a process, for python.test.ts: its
// JSON events in the order they arrived, its stdin, and signals to pause it. It runs on the library as
// scripts/setup-polyglot.sh installed it in .conformance/venv.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
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

/** Runs `probe.py scenario` with more flags (--sessions, --bearer JWT, --tls-* FILE); resolves with its exit code and output. */
export function runScenario(server: string, resource: string, flags: string[] = []): Promise<{ code: number | null; output: string }> {
  assertInstalled();
  const child = spawn(PYTHON, [PROBE, "scenario", "--server", server, "--resource", resource, ...flags], { cwd: ROOT });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, output })));
}

/** Runs the library's unit tests (sdk/python/tests/test_*.py, unittest); resolves with its exit code and output. */
export function runUnitTests(): Promise<{ code: number | null; output: string }> {
  assertInstalled();
  const child = spawn(PYTHON, ["-m", "unittest", "discover", "-s", `${ROOT}sdk/python/tests`, "-p", "test_*.py"], { cwd: ROOT });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, output })));
}

/** One event of `probe.py hold`, with `seq`: its place in the order the events arrived. */
export type ProbeEvent = Record<string, any> & { event: string; at: number; seq: number };

/** `probe.py hold`: holds one lease until killed. */
export class HoldProbe {
  readonly process: ChildProcess;
  private readonly events: ProbeEvent[] = [];
  private readonly taken = new Set<ProbeEvent>();
  private notify?: () => void;
  private readonly exited: Promise<void>;
  private stderr = "";

  constructor(servers: string[], resource: string, o: { ttlSeconds: number; asyncio?: boolean; shared?: boolean; lockDelaySeconds?: number }) {
    assertInstalled();
    const args = [PROBE, "hold", "--server", servers.join(","), "--resource", resource, "--ttl", String(o.ttlSeconds), ...(o.shared ? ["--shared"] : [])];
    if (o.lockDelaySeconds) args.push("--lock-delay", String(o.lockDelaySeconds));
    this.process = spawn(PYTHON, o.asyncio ? [...args, "--asyncio"] : args, { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    this.exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    this.process.stderr!.on("data", (d) => (this.stderr += d));
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      this.events.push({ ...JSON.parse(line), seq: this.events.length });
      this.notify?.();
    });
  }

  /** The next event called `name` not taken yet (skipping others), or an error after timeoutMs. */
  async next(name: string, timeoutMs: number, where: (e: ProbeEvent) => boolean = () => true): Promise<ProbeEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = this.events.find((x) => x.event === name && !this.taken.has(x) && where(x));
      if (e) {
        this.taken.add(e);
        return e;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the probe did not report "${name}" within ${timeoutMs} ms; stderr:\n${this.stderr}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.notify = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  /** Every event called `name` so far, taken or not. */
  seen(name: string): ProbeEvent[] {
    return this.events.filter((e) => e.event === name);
  }

  send(command: string): void {
    this.process.stdin!.write(command + "\n");
  }

  pause(): void {
    this.process.kill("SIGSTOP");
  }

  resume(): void {
    this.process.kill("SIGCONT");
  }

  /** Ends the process, paused or not, and waits for it. */
  async kill(): Promise<void> {
    if (this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGCONT");
      this.process.kill("SIGKILL");
    }
    await this.exited;
  }
}
