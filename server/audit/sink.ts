// Where audit lines go: a file (appended to) or standard output, written off the call's path. A call only
// puts its line in a bounded queue; one writer drains the queue, a batch at a time, so a slow disk holds
// at most one write (and one thread of libuv's pool) however many calls come, and never delays a call.
// When the queue is full, or the file cannot be written (a full disk, /dev/full, a removed mount), the
// lines are dropped and counted, the calls go on, and the file is opened again after a pause.
import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import type { AuditRecord } from "./record.js";

export interface AuditSinkOptions {
  /** A file to append to, or "-" for standard output. */
  target: string;
  /** Lines waiting to be written beyond this are dropped. */
  maxQueued?: number;
  /** After a failed write, lines are dropped for this long, then the file is opened again. */
  retryMs?: number;
  /** Told of each write failure (the server logs it). */
  onError?(err: Error, dropped: number): void;
  /** Told of lines written, and of lines dropped. */
  onWritten?(n: number): void;
  onDropped?(n: number): void;
}

const MAX_QUEUED = 10_000;
const RETRY_MS = 1000;

export class AuditSink {
  private queue: string[] = [];
  private writing = false;
  private out: Writable | undefined;
  private brokenUntil = 0;
  private closed = false;
  private idle: (() => void)[] = [];
  private reopening = false;

  constructor(private readonly o: AuditSinkOptions) {}

  /** The line goes to the queue, or is dropped and counted; nothing here waits or throws. */
  write(record: AuditRecord): void {
    if (this.closed || this.queue.length >= (this.o.maxQueued ?? MAX_QUEUED) || Date.now() < this.brokenUntil) {
      this.o.onDropped?.(1);
      return;
    }
    let line: string;
    try {
      line = JSON.stringify(record) + "\n";
    } catch {
      this.o.onDropped?.(1);
      return;
    }
    this.queue.push(line);
    if (!this.writing) this.drain();
  }

  /**
   * The file is closed and opened again by path before the next line (on SIGHUP): after a rotation that
   * renamed it, lines go to the new file. Standard output is not reopened.
   */
  reopen(): void {
    this.reopening = true;
  }

  /** Resolves once every queued line is written (or dropped), or after timeoutMs; later lines are dropped. The file is closed. */
  async close(timeoutMs: number): Promise<void> {
    this.closed = true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)));
    await Promise.race([this.drained(), timeout]);
    const out = this.out;
    this.out = undefined;
    if (out && out !== process.stdout) await Promise.race([new Promise<void>((r) => out.end(r)), timeout]);
    clearTimeout(timer);
  }

  private drained(): Promise<void> {
    if (!this.writing && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  private open(): Writable {
    if (this.reopening) {
      this.reopening = false;
      if (this.out && this.out !== process.stdout) this.out.end();
      if (this.out !== process.stdout) this.out = undefined;
    }
    if (this.out) return this.out;
    if (this.o.target === "-") return (this.out = process.stdout);
    const out = createWriteStream(this.o.target, { flags: "a" });
    // Failures are taken from each write's callback; the 'error' event must be heard or it would end the process.
    out.on("error", () => {});
    return (this.out = out);
  }

  private drain(): void {
    if (this.queue.length === 0) {
      for (const r of this.idle.splice(0)) r();
      return;
    }
    const batch = this.queue;
    this.queue = [];
    this.writing = true;
    let out: Writable;
    try {
      out = this.open();
      out.write(batch.join(""), (err) => this.wrote(batch.length, err ?? undefined));
    } catch (err) {
      this.wrote(batch.length, err as Error);
    }
  }

  private wrote(n: number, err: Error | undefined): void {
    this.writing = false;
    if (!err) {
      this.o.onWritten?.(n);
    } else {
      // Lines waiting behind a failed write would fail too: dropped with it, and the file opened again later.
      const lost = n + this.queue.length;
      this.queue = [];
      this.brokenUntil = Date.now() + (this.o.retryMs ?? RETRY_MS);
      const out = this.out;
      this.out = undefined;
      if (out && out !== process.stdout) out.destroy();
      this.o.onDropped?.(lost);
      try {
        this.o.onError?.(err, lost);
      } catch {
        // Reporting failed: the lines are counted all the same.
      }
    }
    this.drain();
  }
}
