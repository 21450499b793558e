// What the runner gives a scenario family, and what a family gives back: its JSON and its verdicts on
// the targets of the issues it measures (each target named by its issue and item, as "41.2").
import type { TestEtcd } from "../test/harness/etcd.js";
import type { TestServer } from "../test/harness/server.js";

export interface Flags {
  /** Seconds per measured row. */
  seconds: number;
  /** Leases held in the leases scenario. */
  leases: number;
  /** Seconds the leases are held. */
  hold: number;
  /** Ask the SDK for sessions in the leases scenario (when it has them). */
  sessions: boolean;
  /** Resources held in the scale scenario, each size in turn. */
  held: number[];
  /** Resources a session holds in the scale scenario. */
  perSession: number;
  /** A folder for the server's CPU profiles, or undefined. */
  profile?: string;
}

export interface Context {
  readonly flags: Flags;
  readonly etcd: TestEtcd;
  /** The server now serving; freshServer() replaces it. */
  server(): TestServer;
  /** Stops the server and starts a new one on the same etcd, for a measurement that must not inherit the heap of earlier load. */
  freshServer(): Promise<TestServer>;
  /** Unique to this run, for resource and key names. */
  readonly runId: string;
  /** A progress line (stderr), so that stdout holds only the tables. */
  progress(line: string): void;
}

/** A verdict on one target of issue 9. */
export interface Check {
  /** The target's number in the issue, and what it asks, briefly. */
  target: string;
  /**
   * "met at a smaller size": met by a run smaller or shorter than the target's (e.g. --hold 60, not 300);
   * "reported": a curve to read, with no threshold; "not measured": not run, or not measurable yet.
   */
  status: "met" | "met at a smaller size" | "not met" | "not measured" | "reported";
  /** The measured values behind the verdict. */
  detail: string;
}

export interface Outcome {
  json: unknown;
  checks: Check[];
}

export interface Scenario {
  /** The name for --only. */
  name: string;
  /** One line for --help. */
  about: string;
  /** Roughly how long it runs with these flags, in seconds, for the plan printed at the start. */
  estimate(flags: Flags): number;
  run(ctx: Context): Promise<Outcome>;
}
