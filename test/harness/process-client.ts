// Drives a client process that reads commands on stdin and answers one JSON line per command.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { nodeProgram } from "./programs.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export class ProcessClient {
  readonly process: ChildProcess;
  private readonly answers: string[] = [];
  private waiting?: (line: string) => void;

  constructor(script: string, args: string[]) {
    const [node, ...program] = nodeProgram(script);
    this.process = spawn(node, [...program, ...args], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
    createInterface({ input: this.process.stdout! }).on("line", (line) => {
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = undefined;
        w(line);
      } else {
        this.answers.push(line);
      }
    });
  }

  /** Sends a command; resolves with its parsed answer. */
  async send(command: string, timeoutMs = 15_000): Promise<Record<string, any>> {
    this.process.stdin!.write(command + "\n");
    return this.next(timeoutMs);
  }

  /** Sends a command without waiting (e.g. to a paused process); read the answer with next(). */
  post(command: string): void {
    this.process.stdin!.write(command + "\n");
  }

  next(timeoutMs = 15_000): Promise<Record<string, any>> {
    const queued = this.answers.shift();
    if (queued !== undefined) return Promise.resolve(JSON.parse(queued));
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      this.waiting = (line) => {
        clearTimeout(t);
        resolve(JSON.parse(line));
      };
    });
  }

  pause(): void {
    this.process.kill("SIGSTOP");
  }

  resume(): void {
    this.process.kill("SIGCONT");
  }

  kill(): void {
    this.process.kill("SIGCONT");
    this.process.kill("SIGKILL");
  }
}
