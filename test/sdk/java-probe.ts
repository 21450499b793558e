// The Java client library's probe (sdk/java/probe, built by scripts/setup-polyglot.sh) as a process: its
// `scenario` or `semantics` run to the end, or its `hold` driven line by line: JSON events on stdout, commands on stdin.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const JAR = "sdk/java/probe/target/fk-sdk-probe.jar";

/** Fails, with what to do, when setup-polyglot.sh has not built the probe. */
export function assertProbeBuilt(): void {
  const missing = `${ROOT}/.conformance/java-sdk.missing`;
  if (existsSync(missing)) throw new Error(`the Java SDK is not built: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(`${ROOT}/${JAR}`)) throw new Error("the Java SDK is not built: run bash scripts/setup-polyglot.sh (npm test runs it)");
}

/**
 * Runs `scenario` or `semantics` to its end; flags: more of them (sessions "true", bearer JWT, tls-ca,
 * tls-cert, tls-key FILE).
 */
export async function runChecks(command: "scenario" | "semantics", server: string, resource: string, flags: Record<string, string> = {}): Promise<{ code: number | null; output: string }> {
  assertProbeBuilt();
  const more = Object.entries(flags).flatMap(([name, value]) => [`--${name}`, value]);
  const child = spawn("java", ["-jar", JAR, command, "--server", server, "--resource", resource, ...more], { cwd: ROOT });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  return { code, output };
}

/** One line the holder printed: its event, its wall-clock time in ms, and the event's fields. */
export type Line = { event: string; at: number; [field: string]: any };

/** A `hold` process: a lease held through the Java library, reporting what it sees. */
export class JavaHolder {
  readonly process: ChildProcess;
  /** Every line printed so far, in order. */
  readonly lines: Line[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly exited: Promise<void>;

  constructor(o: { servers: string[]; resource: string; ttlMs: number; writeEveryMs?: number; sessions?: boolean; lockDelayMs?: number; shared?: boolean }) {
    assertProbeBuilt();
    const args = ["-jar", JAR, "hold", "--server", o.servers.join(","), "--resource", o.resource, "--ttl-ms", String(o.ttlMs)];
    if (o.writeEveryMs) args.push("--write-every-ms", String(o.writeEveryMs));
    if (o.sessions) args.push("--sessions", "true");
    if (o.lockDelayMs) args.push("--lock-delay-ms", String(o.lockDelayMs));
    if (o.shared) args.push("--shared", "true");
    this.process = spawn("java", args, { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
    this.exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    createInterface({ input: this.process.stdout! }).on("line", (l) => {
      this.lines.push(JSON.parse(l));
      for (const w of this.waiters) w();
    });
  }

  /** The lines of one event. */
  seen(event: string): Line[] {
    return this.lines.filter((l) => l.event === event);
  }

  /** The first line (from index `from` on) that matches; waits for it at most timeoutMs. */
  async next(match: string | ((l: Line) => boolean), timeoutMs: number, from = 0): Promise<Line> {
    const test = typeof match === "string" ? (l: Line) => l.event === match : match;
    const found = () => this.lines.slice(from).find(test);
    return new Promise((resolve, reject) => {
      const check = () => {
        const l = found();
        if (!l) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(l);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`the Java holder printed no ${typeof match === "string" ? match : "matching"} line within ${timeoutMs} ms; it printed:\n${this.lines.map((l) => JSON.stringify(l)).join("\n")}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Sends a command; resolves with its answer, the next line of that event. */
  async command(command: string, event: string, timeoutMs = 10_000): Promise<Line> {
    const from = this.lines.length;
    this.process.stdin!.write(command + "\n");
    return this.next((l) => l.event === event && (event !== "put" || l.source === "stdin"), timeoutMs, from);
  }

  pause(): void {
    this.process.kill("SIGSTOP");
  }

  resume(): void {
    this.process.kill("SIGCONT");
  }

  async kill(): Promise<void> {
    if (this.process.exitCode !== null || this.process.signalCode !== null) return;
    this.process.kill("SIGCONT");
    this.process.kill("SIGKILL");
    await this.exited;
  }
}
