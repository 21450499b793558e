// The Go client's test program (sdk/go/cmd/fk-sdk-probe, built by scripts/setup-polyglot.sh) as a
// process: its `hold` prints one JSON line per event and takes commands on stdin; its `scenario` runs
// the conformance scenario through the library.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PROBE = `${ROOT}/.conformance/sdk-go/fk-sdk-probe`;

/** Fails, with what to do, when setup-polyglot.sh has not built the probe. */
export function assertProbeBuilt(): void {
  const missing = `${ROOT}/.conformance/sdk-go.missing`;
  if (existsSync(missing)) throw new Error(`the Go client library is not built: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(PROBE)) throw new Error("the Go client library is not built: run bash scripts/setup-polyglot.sh (npm test runs it)");
}

/** One line the probe printed: `event` names it, `at` is when (ms since the epoch). */
export type ProbeEvent = Record<string, any> & { event: string; at: number };

/** Runs `fk-sdk-probe scenario`, with credentials flags (--bearer, --tls-ca, --tls-cert, --tls-key); resolves with its exit code and output. */
export function runScenario(servers: string[], resource: string, credentials: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  assertProbeBuilt();
  const flags = Object.entries(credentials).flatMap(([k, v]) => [`--${k}`, v]);
  const child = spawn(PROBE, ["scenario", "--server", servers.join(","), "--resource", resource, ...flags], { cwd: ROOT });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

/** `fk-sdk-probe hold`: a Go process holding a lease. */
export class GoHolder {
  readonly process: ChildProcess;
  /** Every event printed so far, in order. */
  readonly events: ProbeEvent[] = [];
  private readonly waiters: { match: (e: ProbeEvent) => boolean; resolve: (e: ProbeEvent) => void }[] = [];
  private stderr = "";
  private exited = false;

  constructor(servers: string[], resource: string, ttlMs: number, o: { sessions?: boolean; shared?: boolean; holder?: string; lockDelayMs?: number } = {}) {
    assertProbeBuilt();
    const args = [
      "hold",
      "--server",
      servers.join(","),
      "--resource",
      resource,
      "--ttl",
      `${ttlMs}ms`,
      ...(o.sessions ? ["--sessions"] : []),
      ...(o.shared ? ["--shared"] : []),
      ...(o.lockDelayMs ? ["--lock-delay", `${o.lockDelayMs}ms`] : []),
      ...(o.holder ? ["--holder", o.holder] : []),
    ];
    this.process = spawn(PROBE, args, {
      cwd: ROOT,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.process.stderr!.on("data", (d) => (this.stderr += d));
    this.process.once("exit", () => (this.exited = true));
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      const e = JSON.parse(line) as ProbeEvent;
      this.events.push(e);
      for (const w of this.waiters.filter((w) => w.match(e))) {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        w.resolve(e);
      }
    });
  }

  seen(event: string): ProbeEvent[] {
    return this.events.filter((e) => e.event === event);
  }

  /** The first event named `event` (that `match` accepts) printed from now on, or already printed if `past`. */
  next(event: string, timeoutMs: number, match: (e: ProbeEvent) => boolean = () => true, past = false): Promise<ProbeEvent> {
    const accept = (e: ProbeEvent) => e.event === event && match(e);
    const already = past ? this.events.find(accept) : undefined;
    if (already) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`the Go holder printed no "${event}" within ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      this.waiters.push({ match: accept, resolve: (e) => (clearTimeout(t), resolve(e)) });
    });
  }

  /** Writes one command line to the probe's stdin (read once it runs, if it is paused). */
  post(command: string): void {
    this.process.stdin!.write(command + "\n");
  }

  /** Sends a command and waits for the event it answers with. */
  async send(command: string, answer: string, timeoutMs = 15_000): Promise<ProbeEvent> {
    const next = this.next(answer, timeoutMs);
    this.post(command);
    return next;
  }

  pause(): void {
    this.process.kill("SIGSTOP");
  }

  resume(): void {
    this.process.kill("SIGCONT");
  }

  async kill(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((r) => this.process.once("exit", r));
    this.process.kill("SIGCONT");
    this.process.kill("SIGKILL");
    await exited;
  }
}
