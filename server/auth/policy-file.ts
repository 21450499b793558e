// The policy file given by --policy: read at start, and read again at SIGHUP or when it changes, so that
// access can be granted or withdrawn without a restart.
//
// A reload swaps the whole policy or nothing. A file that cannot be read or does not check leaves the
// policy in force, and says so at error level: a typo in an edit must not open the server up, nor lock
// every caller out, nor leave it with half the rules. The swap is one assignment, so a call sees either
// the old policy or the new one.
//
// The directory is watched, not the file: editors and `mv`, and Kubernetes when it updates a mounted
// ConfigMap, replace a file by renaming another over it, and a watch on the old file would see nothing
// more. Any event in the directory leads to a read after a short pause; a file whose bytes have not
// changed is not parsed again, and the same bad file is reported once, however many events it causes.
import { createHash } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../errors/config-error.js";
import { Policy, PolicyError } from "./policy.js";

/** Editors write in steps (truncate, write, rename); reading once they are done avoids reporting a half-written file. */
const DEBOUNCE_MS = 100;

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The file's text; invalid UTF-8 is refused rather than read as U+FFFD, which no caller's name holds. */
function decode(bytes: Buffer, path: string): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new PolicyError(path, "", "the file is not valid UTF-8; save it as UTF-8");
  }
}

const readError = (path: string, err: unknown) => `cannot read "${path}" (${(err as NodeJS.ErrnoException).code ?? String(err)})`;

export class PolicyFile {
  private policy: Policy;
  /** sha256 of the file's bytes for the policy in force, logged so that replicas can be compared with `sha256sum`. */
  private digest: string;
  /** What the last read found (a digest, or a read error), so that repeated events about one bad file log once. */
  private lastSeen: string;
  private queue: Promise<unknown> = Promise.resolve();
  private watcher?: FSWatcher;
  private timer?: NodeJS.Timeout;
  private closed = false;
  private readonly listeners: ((policy: Policy) => void)[] = [];

  private constructor(
    readonly path: string,
    private readonly log: Logger,
    policy: Policy,
    digest: string,
  ) {
    this.policy = policy;
    this.digest = digest;
    this.lastSeen = digest;
  }

  /** Reads and parses the file; throws ConfigError naming --policy and what is wrong, and where. */
  static async load(path: string, log: Logger): Promise<PolicyFile> {
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (err) {
      throw new ConfigError(`--policy (FENCEKEEPER_POLICY): ${readError(path, err)}`);
    }
    let policy: Policy;
    try {
      policy = Policy.parse(decode(bytes, path), path);
    } catch (err) {
      if (!(err instanceof PolicyError)) throw err;
      throw new ConfigError(`--policy (FENCEKEEPER_POLICY): ${err.message}`);
    }
    const file = new PolicyFile(path, log, policy, sha256(bytes));
    log.info({ policy: path, rules: policy.ruleCount, sha256: file.digest }, "policy loaded");
    file.warnIfEmpty();
    return file;
  }

  /** The policy in force. Ask again for each call: a reload replaces it. */
  current(): Policy {
    return this.policy;
  }

  /**
   * Reads the file again (`reason`, e.g. "SIGHUP", goes into the log). A good file is swapped in and
   * logged at info; a bad or unreadable one keeps the policy in force and is logged at error. Resolves
   * true if a new policy is in force; never rejects. Reloads run one at a time, in order.
   */
  reload(reason: string): Promise<boolean> {
    return this.enqueue(reason, false);
  }

  /**
   * Calls `fn` with each new policy once it is in force, so that what was granted under the old one
   * (open streams: open-streams.ts) is judged again.
   */
  onReload(fn: (policy: Policy) => void): void {
    this.listeners.push(fn);
  }

  /** Reloads when anything in the file's directory changes, after a pause of about 100 ms. */
  watch(): void {
    if (this.watcher || this.closed) return;
    try {
      // Not persistent: the watch alone must not keep a stopping server alive.
      this.watcher = watch(dirname(this.path), { persistent: false }, () => this.changed());
    } catch (err) {
      this.log.warn({ policy: this.path, err: (err as Error).message }, "policy file not watched: edits are taken up at SIGHUP only");
      return;
    }
    this.watcher.on("error", (err) => {
      this.log.warn({ policy: this.path, err: err.message }, "policy file no longer watched: edits are taken up at SIGHUP only");
      this.stopWatching();
    });
  }

  /** Stops watching. The policy in force stays, and reload() still works. */
  close(): void {
    this.closed = true;
    this.stopWatching();
  }

  private stopWatching(): void {
    this.watcher?.close();
    this.watcher = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private changed(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.closed) void this.enqueue("file changed", true);
    }, DEBOUNCE_MS);
  }

  private enqueue(reason: string, fromWatcher: boolean): Promise<boolean> {
    const run = this.queue.then(() => this.apply(reason, fromWatcher));
    this.queue = run.catch(() => {});
    return run;
  }

  /** `fromWatcher`: stay quiet about what was already said, since events come for any file of the directory. */
  private async apply(reason: string, fromWatcher: boolean): Promise<boolean> {
    const inForce = { rules: this.policy.ruleCount, sha256: this.digest };
    const refuse = (seen: string, err: string) => {
      if (!(fromWatcher && seen === this.lastSeen)) {
        this.log.error({ policy: this.path, reason, err, inForce }, "policy not reloaded: the policy in force stays until the file is fixed");
      }
      this.lastSeen = seen;
      return false;
    };

    let bytes: Buffer;
    try {
      bytes = await readFile(this.path);
    } catch (err) {
      const message = readError(this.path, err);
      return refuse(message, message);
    }
    const digest = sha256(bytes);
    if (digest === this.digest) {
      if (!fromWatcher) this.log.info({ policy: this.path, reason, ...inForce }, "policy unchanged");
      this.lastSeen = digest;
      return false;
    }
    let next: Policy;
    try {
      next = Policy.parse(decode(bytes, this.path), this.path);
    } catch (err) {
      return refuse(digest, (err as Error).message);
    }
    this.policy = next;
    this.digest = digest;
    this.lastSeen = digest;
    this.log.info({ policy: this.path, reason, rules: next.ruleCount, sha256: digest }, "policy reloaded");
    this.warnIfEmpty();
    for (const fn of this.listeners) {
      try {
        fn(next);
      } catch (err) {
        this.log.error({ policy: this.path, err: (err as Error).message }, "re-checking what the old policy granted failed");
      }
    }
    return true;
  }

  private warnIfEmpty(): void {
    if (this.policy.ruleCount === 0) this.log.warn({ policy: this.path }, "the policy has no rules: every call is denied");
  }
}
