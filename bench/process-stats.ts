// CPU and memory of a process by pid, read from Linux's /proc: CPU seconds (user + system) from
// /proc/<pid>/stat, resident memory from /proc/<pid>/status. A Sampler reads them every interval and
// turns CPU seconds into a fraction of one core over each window.
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";

/** Clock ticks per second of /proc/<pid>/stat's times; 100 on nearly every Linux. */
const TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export interface ProcessReading {
  /** performance.now() when read, in ms. */
  at: number;
  /** User + system CPU time used so far, in seconds. */
  cpuSeconds: number;
  /** Resident set size, in MB (2^20 bytes). */
  rssMb: number;
}

/** One reading of the process, or undefined if it is gone. */
export function readProcess(pid: number): ProcessReading | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / TICKS;
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rssKb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? NaN);
    return { at: performance.now(), cpuSeconds, rssMb: rssKb / 1024 };
  } catch {
    return undefined;
  }
}

export interface Sample {
  /** Seconds since the sampler started, at the end of this window. */
  t: number;
  /** CPU used in the window, as a fraction of one core (1 = one core busy all the time). */
  cpu: number;
  rssMb: number;
  /** What the caller said was going on (e.g. the number of leases held). */
  label?: string | number;
}

export interface Stats {
  samples: number;
  seconds: number;
  cpuMean: number;
  cpuMax: number;
  rssMeanMb: number;
  rssMaxMb: number;
  /** The last sample's: after a burst, what the process kept once its heap settled. */
  rssLastMb: number;
}

/** Samples a process every intervalMs until stopped; marks let a caller summarize parts of the run. */
export class Sampler {
  readonly samples: Sample[] = [];
  readonly #pid: number;
  readonly #started = performance.now();
  readonly #timer: NodeJS.Timeout;
  #last: ProcessReading | undefined;
  #label: string | number | undefined;

  constructor(pid: number, intervalMs = 1000) {
    this.#pid = pid;
    this.#last = readProcess(pid);
    this.#timer = setInterval(() => this.#read(), intervalMs);
  }

  /** Labels the samples taken from now on. */
  label(label: string | number | undefined): void {
    this.#label = label;
  }

  /** Seconds since the sampler started. */
  now(): number {
    return (performance.now() - this.#started) / 1000;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Mean and max over the samples whose window ended in [from, to) seconds. */
  stats(from = 0, to = Infinity): Stats {
    const s = this.samples.filter((x) => x.t >= from && x.t < to);
    const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
    const max = (xs: number[]) => (xs.length ? Math.max(...xs) : NaN);
    return {
      samples: s.length,
      seconds: to === Infinity ? this.now() - from : to - from,
      cpuMean: mean(s.map((x) => x.cpu)),
      cpuMax: max(s.map((x) => x.cpu)),
      rssMeanMb: mean(s.map((x) => x.rssMb)),
      rssMaxMb: max(s.map((x) => x.rssMb)),
      rssLastMb: s.length ? s[s.length - 1].rssMb : NaN,
    };
  }

  #read(): void {
    const r = readProcess(this.#pid);
    if (!r) return;
    if (this.#last) {
      const window = (r.at - this.#last.at) / 1000;
      if (window > 0) {
        this.samples.push({ t: this.now(), cpu: (r.cpuSeconds - this.#last.cpuSeconds) / window, rssMb: r.rssMb, label: this.#label });
      }
    }
    this.#last = r;
  }
}
