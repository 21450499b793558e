// A handle on a holder process (demo/holder.ts): its events, in order, its stdin, and signals to pause it.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const HOLDER = fileURLToPath(new URL("./holder.ts", import.meta.url));

export type HolderEvent = Record<string, any> & { event: string; at: number };

export class HolderProcess {
  readonly process: ChildProcess;
  private readonly events: HolderEvent[] = [];
  private notify?: () => void;
  private readonly exited: Promise<void>;

  constructor(url: string, readonly name: string, resource: string, ttlMs: number) {
    this.process = spawn(process.execPath, ["--import", "tsx", HOLDER, url, name, resource, String(ttlMs)], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.exited = new Promise((resolve) => this.process.once("exit", () => resolve()));
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      this.events.push(JSON.parse(line));
      this.notify?.();
    });
  }

  /** The next event called `name` (skipping others), or an error after timeoutMs. */
  async next(name: string, timeoutMs: number): Promise<HolderEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.events.findIndex((e) => e.event === name);
      if (i >= 0) return this.events.splice(i, 1)[0];
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${this.name} did not report "${name}" within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.notify = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  }

  /** The events called `name` that arrived and were not taken by next(). */
  seen(name: string): HolderEvent[] {
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
