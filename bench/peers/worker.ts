// A worker process of the peers benchmark: a Go, Java or TypeScript program that runs one workload on
// one system and speaks JSON lines on stdout (events: ready, held, waiting, granted, done) and takes
// words on stdin (go, stop, write, release, close). See bench/peers/README.md.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export interface Event {
  event: string;
  [k: string]: unknown;
}

export class Worker {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly #queue: Event[] = [];
  readonly #waiting: ((e: Event | Error) => void)[] = [];
  readonly #stderr: string[] = [];
  readonly exited: Promise<number | string | null>;
  /** performance.now() when each event line arrived. */
  readonly arrivals = new Map<string, number>();

  constructor(readonly label: string, command: string[], env?: Record<string, string>) {
    const [program, ...args] = command;
    this.child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
    this.pid = this.child.pid!;
    this.child.stdin!.on("error", () => undefined); // a worker that exited first
    createInterface({ input: this.child.stderr! }).on("line", (l) => {
      this.#stderr.push(l);
      if (this.#stderr.length > 50) this.#stderr.shift();
    });
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      let e: Event;
      try {
        e = JSON.parse(line);
      } catch {
        return; // a library's stray output
      }
      if (typeof e?.event !== "string") return;
      this.arrivals.set(e.event, performance.now());
      const w = this.#waiting.shift();
      if (w) w(e);
      else this.#queue.push(e);
    });
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        resolve(code ?? signal);
        for (const w of this.#waiting.splice(0)) w(new Error(`${this.label} exited with ${code ?? signal}${this.stderr()}`));
      }),
    );
  }

  stderr(): string {
    return this.#stderr.length ? `; its last lines:\n    ${this.#stderr.slice(-12).join("\n    ")}` : "";
  }

  /** The next event, which must be `name`; fails after timeoutMs. */
  async next(name: string, timeoutMs = 120_000): Promise<Event> {
    const e =
      this.#queue.shift() ??
      (await new Promise<Event | Error>((resolve, reject) => {
        if (this.child.exitCode !== null || this.child.signalCode !== null) {
          reject(new Error(`${this.label} exited with ${this.child.exitCode ?? this.child.signalCode}${this.stderr()}`));
          return;
        }
        const timer = setTimeout(() => {
          const i = this.#waiting.indexOf(done);
          if (i >= 0) this.#waiting.splice(i, 1);
          reject(new Error(`${this.label}: no "${name}" within ${timeoutMs / 1000} s${this.stderr()}`));
        }, timeoutMs);
        const done = (x: Event | Error) => {
          clearTimeout(timer);
          resolve(x);
        };
        this.#waiting.push(done);
      }));
    if (e instanceof Error) throw e;
    if (e.event !== name) throw new Error(`${this.label}: expected "${name}", got ${JSON.stringify(e)}`);
    return e;
  }

  send(word: string): void {
    this.child.stdin!.write(`${word}\n`);
  }

  signal(sig: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(sig);
  }

  /** Says "close" and waits for the exit; kills the worker if it has not exited within timeoutMs. */
  async close(timeoutMs = 15_000): Promise<void> {
    this.send("close");
    this.child.stdin!.end();
    const timer = setTimeout(() => this.signal("SIGKILL"), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  async kill(): Promise<void> {
    this.signal("SIGCONT");
    this.signal("SIGKILL");
    await this.exited;
  }
}
