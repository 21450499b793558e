// Where audit lines go: a file (appended to), a FIFO, or standard output, written off the call's path. A
// call only puts its line in a bounded queue; one writer drains the queue, a batch at a time, so a slow
// disk holds at most one write (and one thread of libuv's pool) however many calls come, and never delays
// a call.
//
// Whatever the target does, the server neither hangs nor leaves half a line, and counts every line once,
// as written or as dropped:
// - It is opened without blocking (O_NONBLOCK: a FIFO nobody reads fails at once, ENXIO) and within a
//   deadline (a hung mount); until it opens, lines are dropped and it is tried again every retryMs.
// - A FIFO or a pipe is written whole lines at a time, at most PIPE_BUF bytes a write, which the kernel
//   writes whole or not at all; a reader that does not read makes the writer wait (the queue fills and
//   drops), never tear a line.
// - A file the disk cannot take whole is cut back to its last whole line (a write that stops half-way in
//   a line, then ENOSPC), and a file that ends in half a line when opened gets a line break first: no line
//   is ever torn, or glued to the next.
// - A file removed or replaced (by path: another inode) is noticed before the next batch and created again.
import { constants, close, fstat, ftruncate, open, read, stat, write, type Stats } from "node:fs";
import { promisify } from "node:util";
import type { AuditRecord } from "./record.js";

export interface AuditSinkOptions {
  /** A file to append to (or a FIFO), or "-" for standard output. */
  target: string;
  /** Lines waiting to be written beyond this are dropped. */
  maxQueued?: number;
  /** After a failure, lines are dropped for this long, then the target is opened again. */
  retryMs?: number;
  /** Opening the target may take this long; a write that has not returned by then is reported (and waited for). */
  deadlineMs?: number;
  /** Told of each failure, with what it means for a person; and of the first write after failures. */
  onError?(err: Error, meaning: string): void;
  onRecovered?(): void;
  /** Told of lines written, and of lines dropped. */
  onWritten?(n: number): void;
  onDropped?(n: number): void;
}

const MAX_QUEUED = 10_000;
const RETRY_MS = 1000;
const DEADLINE_MS = 5000;
/** What Linux writes to a pipe whole or not at all (POSIX: at least 512). */
const PIPE_BUF = 4096;
/** How often a write to a pipe that is full is tried again. */
const PIPE_POLL_MS = 50;

const openAsync = promisify(open);
const writeAsync = promisify(write);
const fstatAsync = promisify(fstat);
const statAsync = promisify(stat);
const closeAsync = promisify(close);
const ftruncateAsync = promisify(ftruncate);
const readAsync = promisify(read);

/** What the writer holds open. */
interface Target {
  fd: number;
  /** A regular file: cut back after a torn write, and checked for removal by path. */
  file: boolean;
  /** A FIFO or a pipe: written at most PIPE_BUF bytes at a time. */
  pipe: boolean;
  /** The file's identity, to notice it removed or replaced. */
  dev: number;
  ino: number;
  /** The file ended in half a line: a line break goes first. */
  unended: boolean;
}

/** An error with what it means, for the log. */
class SinkError extends Error {
  constructor(
    readonly meaning: string,
    readonly cause?: unknown,
  ) {
    super(cause instanceof Error ? cause.message : meaning);
  }
}

export class AuditSink {
  private queue: string[] = [];
  private running = false;
  private target: Target | undefined;
  private brokenUntil = 0;
  private failing = false;
  private closed = false;
  private idle: (() => void)[] = [];
  private reopening = false;
  /** Lines handed to a write that has not returned: counted when it does, or as dropped at close. */
  private inFlight = 0;

  constructor(private readonly o: AuditSinkOptions) {}

  /** The line goes to the queue, or is dropped and counted; nothing here waits or throws. */
  write(record: AuditRecord): void {
    if (this.closed || this.queue.length >= (this.o.maxQueued ?? MAX_QUEUED) || Date.now() < this.brokenUntil) {
      this.o.onDropped?.(1);
      return;
    }
    let line: string;
    try {
      line = escapeControls(JSON.stringify(record)) + "\n";
    } catch {
      this.o.onDropped?.(1);
      return;
    }
    this.queue.push(line);
    if (!this.running) void this.run();
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
    clearTimeout(timer);
    // What is still queued or being written will not be: counted now, once.
    const lost = this.queue.length + this.inFlight;
    this.queue = [];
    this.inFlight = 0;
    if (lost > 0) this.o.onDropped?.(lost);
    if (!this.running) await this.release();
  }

  private drained(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.idle.push(r));
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        if (Date.now() < this.brokenUntil) {
          this.o.onDropped?.(batch.length);
          continue;
        }
        await this.writeBatch(batch);
      }
    } finally {
      this.running = false;
      if (this.closed) await this.release();
      for (const r of this.idle.splice(0)) r();
    }
  }

  /** Writes the lines, each whole or not at all; counts each once. */
  private async writeBatch(lines: string[]): Promise<void> {
    this.inFlight = lines.length;
    let t: Target;
    try {
      t = await this.ready();
    } catch (err) {
      this.settle(0, lines.length);
      this.failed(err);
      return;
    }
    for (const chunk of chunks(lines, t.pipe)) {
      const head = t.unended ? "\n" : "";
      const buf = Buffer.from(head + chunk.join(""));
      // Where each line ends in buf.
      const ends: number[] = [];
      let at = Buffer.byteLength(head);
      for (const l of chunk) ends.push((at += Buffer.byteLength(l)));
      let off = 0;
      let counted = 0;
      try {
        while (off < buf.length) {
          off += await this.writeSome(t, buf, off);
          if (off >= Buffer.byteLength(head)) t.unended = false;
          let whole = counted;
          while (whole < ends.length && ends[whole] <= off) whole++;
          if (whole > counted) {
            this.settle(whole - counted, 0);
            counted = whole;
          }
        }
      } catch (err) {
        // The line the write stopped in is cut back off a file; the others are dropped.
        const lineStart = counted === 0 ? Buffer.byteLength(head) : ends[counted - 1];
        if (off > lineStart) await this.cutBack(t, off - lineStart);
        this.settle(0, this.inFlight);
        this.failed(err);
        return;
      }
    }
    if (this.failing) {
      this.failing = false;
      this.o.onRecovered?.();
    }
  }

  /** Lines leave the in-flight count: n written, m dropped. */
  private settle(written: number, dropped: number): void {
    const w = Math.min(written, this.inFlight);
    this.inFlight -= w;
    const d = Math.min(dropped, this.inFlight);
    this.inFlight -= d;
    if (w > 0) this.o.onWritten?.(w);
    if (d > 0) this.o.onDropped?.(d);
  }

  /** The open target, opened (again) when needed: on SIGHUP, after a failure, or when the file at the path is another. */
  private async ready(): Promise<Target> {
    let t = this.target;
    if (t && this.reopening) {
      this.reopening = false;
      await this.release();
      t = undefined;
    }
    if (t?.file) {
      const now = await statAsync(this.o.target).catch(() => undefined);
      if (!now || now.ino !== t.ino || now.dev !== t.dev) {
        // Removed or replaced: a new file at the path, as a reader of the path expects.
        await this.release();
        t = undefined;
      }
    }
    return t ?? (this.target = await this.openTarget());
  }

  private async openTarget(): Promise<Target> {
    if (this.o.target === "-") {
      const st = await fstatAsync(1);
      return { fd: 1, file: false, pipe: st.isFIFO() || st.isSocket(), dev: st.dev, ino: st.ino, unended: false };
    }
    const deadline = this.o.deadlineMs ?? DEADLINE_MS;
    const opening = openAsync(this.o.target, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOCTTY, 0o640);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new SinkError(`opening it did not finish within ${deadline} ms (a hung mount?)`)), deadline);
    });
    let fd: number;
    try {
      fd = await Promise.race([opening, late]);
    } catch (err) {
      // An open that finishes after its deadline is closed at once.
      opening.then((late) => close(late, () => undefined), () => undefined);
      throw err instanceof SinkError ? err : new SinkError(meaningOf(err), err);
    } finally {
      clearTimeout(timer);
    }
    try {
      const st = await fstatAsync(fd);
      if (st.isDirectory()) throw new SinkError("it is a directory");
      return { fd, file: st.isFile(), pipe: st.isFIFO() || st.isSocket(), dev: st.dev, ino: st.ino, unended: st.isFile() && (await endsInHalfALine(fd, st)) };
    } catch (err) {
      close(fd, () => undefined);
      throw err instanceof SinkError ? err : new SinkError(meaningOf(err), err);
    }
  }

  /**
   * One write(2) of what is left from off; the bytes written. A full pipe (EAGAIN) is waited on; a write
   * that takes longer than the deadline is reported once, and still waited for.
   */
  private async writeSome(t: Target, buf: Buffer, off: number): Promise<number> {
    const started = Date.now();
    let reported = false;
    const deadline = this.o.deadlineMs ?? DEADLINE_MS;
    const report = () => {
      if (reported) return;
      reported = true;
      this.failing = true;
      this.o.onError?.(new Error("write stalled"), `its reader does not read: a write has waited ${Date.now() - started} ms (lines are dropped while the queue is full)`);
    };
    for (;;) {
      const watchdog = setTimeout(report, Math.max(0, deadline - (Date.now() - started)));
      try {
        const { bytesWritten } = await writeAsync(t.fd, buf, off, buf.length - off, null);
        if (bytesWritten === 0) throw new SinkError("it took no bytes");
        return bytesWritten;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EAGAIN" || this.closed) throw err instanceof SinkError ? err : new SinkError(meaningOf(err), err);
        if (Date.now() - started >= deadline) report();
        await new Promise((r) => setTimeout(r, PIPE_POLL_MS));
      } finally {
        clearTimeout(watchdog);
      }
    }
  }

  /** A file that took part of a line: cut back to the line's start (shrinking needs no room on the disk). */
  private async cutBack(t: Target, bytes: number): Promise<void> {
    if (!t.file) return;
    try {
      const st = await fstatAsync(t.fd);
      await ftruncateAsync(t.fd, Math.max(0, st.size - bytes));
    } catch {
      // Not cut: the next open finds half a line at the end and starts with a line break.
    }
  }

  private failed(err: unknown): void {
    this.brokenUntil = Date.now() + (this.o.retryMs ?? RETRY_MS);
    void this.release();
    this.failing = true;
    try {
      const e = err instanceof SinkError ? err : new SinkError(meaningOf(err), err);
      this.o.onError?.(e, e.meaning);
    } catch {
      // Reporting failed: the lines are counted all the same.
    }
  }

  private async release(): Promise<void> {
    const t = this.target;
    this.target = undefined;
    if (t && t.fd !== 1) await closeAsync(t.fd).catch(() => undefined);
  }
}

/** Lines grouped for writing: for a pipe, whole lines up to PIPE_BUF bytes a group (a longer line alone); else all. */
function chunks(lines: string[], pipe: boolean): string[][] {
  if (!pipe) return [lines];
  const out: string[][] = [];
  let cur: string[] = [];
  let size = 0;
  for (const l of lines) {
    const n = Buffer.byteLength(l);
    if (cur.length > 0 && size + n > PIPE_BUF) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(l);
    size += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Whether the file's last byte is not a line break (a line torn before this server opened it). */
async function endsInHalfALine(fd: number, st: Stats): Promise<boolean> {
  if (st.size === 0) return false;
  const b = Buffer.alloc(1);
  try {
    // Opened write-only: the last byte is read through the path.
    const rfd = await openAsync(`/proc/self/fd/${fd}`, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      await readAsync(rfd, b, 0, 1, st.size - 1);
    } finally {
      close(rfd, () => undefined);
    }
  } catch {
    return false;
  }
  return b[0] !== 0x0a;
}

/** What an errno means for the audit log, for a person reading the server's log. */
function meaningOf(err: unknown): string {
  switch ((err as NodeJS.ErrnoException).code) {
    case "ENXIO":
      return "it is a FIFO that no process has open for reading";
    case "ENOSPC":
      return "the disk is full";
    case "EDQUOT":
      return "the disk quota is used up";
    case "EPIPE":
      return "its reader has gone";
    case "ENOENT":
      return "its folder does not exist";
    case "EACCES":
    case "EPERM":
      return "the server may not write it";
    case "EROFS":
      return "it is on a read-only file system";
    case "EIO":
      return "the device failed (EIO)";
    default:
      return (err as Error)?.message ?? String(err);
  }
}

/**
 * Characters a terminal or an editor would act on rather than show, written as \uXXXX escapes (the same
 * string to a JSON parser): C0 and C1 controls, DEL, the line and paragraph separators (U+2028, U+2029,
 * which some readers take for line ends) and format controls such as the bidi overrides and isolates
 * (U+202A to U+202E, U+2066 to U+2069) that would reverse a name on the screen.
 */
export function escapeControls(json: string): string {
  return json.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => {
    let out = "";
    for (let i = 0; i < c.length; i++) out += "\\u" + c.charCodeAt(i).toString(16).padStart(4, "0");
    return out;
  });
}
