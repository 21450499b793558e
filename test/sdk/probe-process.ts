// A client library's test program as a process, for the SDK suite (sdk-suite.ts): the JSON line it prints
// per event, in the order they came, commands on its stdin, and signals that pause and end it. Each
// language's probe (go-probe.ts, python-probe.ts, java-probe.ts) says only how to start it.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** One line the probe printed: `event` names it, `at` is when (ms since the epoch), `seq` its place in the order. */
export type ProbeEvent = Record<string, any> & { event: string; at: number; seq: number };

export type Match = string | ((e: ProbeEvent) => boolean);

export class ProbeProcess {
  readonly process: ChildProcess;
  /** Every event printed so far, in order. */
  readonly events: ProbeEvent[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly exited: Promise<void>;
  private stderr = "";

  constructor(
    private readonly what: string,
    command: string,
    args: string[],
  ) {
    this.process = spawn(command, args, { cwd: ROOT, stdio: ["pipe", "pipe", "pipe"] });
    this.exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    this.process.stderr!.on("data", (d) => (this.stderr += d));
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      this.events.push({ ...JSON.parse(line), seq: this.events.length });
      for (const w of this.waiters) w();
    });
  }

  /** Every event named `event` so far. */
  seen(event: string): ProbeEvent[] {
    return this.events.filter((e) => e.event === event);
  }

  /** The events printed since `since` (ms since the epoch), one a line, each with its time after `since`: what a failed check shows. */
  timeline(since: number): string {
    return this.events
      .filter((e) => e.at >= since)
      .map((e) => `+${Math.round(e.at - since)} ms ${JSON.stringify(e)}`)
      .join("\n");
  }

  /** The first event (from index `from` on) that `match` names or accepts; waits for it at most timeoutMs. */
  next(match: Match, timeoutMs: number, from = 0): Promise<ProbeEvent> {
    const accept = typeof match === "string" ? (e: ProbeEvent) => e.event === match : match;
    return new Promise((resolve, reject) => {
      const check = () => {
        const e = this.events.slice(from).find(accept);
        if (!e) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(e);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const printed = this.events.map((e) => JSON.stringify(e)).join("\n");
        reject(new Error(`${this.what} printed no ${typeof match === "string" ? `"${match}"` : "matching"} event within ${timeoutMs} ms; it printed:\n${printed}\nstderr:\n${this.stderr}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Writes one command line to stdin (read once the probe runs, if it is paused). */
  post(command: string): void {
    this.process.stdin!.write(command + "\n");
  }

  /** Sends a command; resolves with its answer: the next event that `answer` names or accepts. */
  command(command: string, answer: Match, timeoutMs = 15_000): Promise<ProbeEvent> {
    const from = this.events.length;
    this.post(command);
    return this.next(answer, timeoutMs, from);
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

/**
 * Runs a probe command to its end; resolves with its exit code, stdout and stderr. With timeoutMs, a
 * command that outlives it is killed (SIGKILL) and resolves as it ends.
 */
export function runToEnd(command: string, args: string[], timeoutMs?: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, { cwd: ROOT });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const timer = timeoutMs !== undefined ? setTimeout(() => child.kill("SIGKILL"), timeoutMs) : undefined;
  return new Promise((resolve, reject) => {
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
