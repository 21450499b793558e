// Soak figures of a long run: the resident memory and open file descriptors (sockets, files, pipes:
// the handles that leak) of every process of the run (each etcd member, server replica and client, and
// the harness itself), sampled from /proc as the run goes, and summed up per process as early (after
// warm-up) against late, with the trend between them (a least-squares slope per hour). A process the
// nemesis restarts keeps its name; its samples go on from the new process.
import { readdirSync, readFileSync } from "node:fs";
import { writeLines } from "./saved-run.js";

export type Role = "etcd" | "server" | "client" | "harness";

interface Sample {
  t: number;
  name: string;
  rssKb: number;
  fds: number;
}

export interface SoakSummary {
  name: string;
  role: Role;
  /** Means over the samples of 10-25% of the run, and of its last 15%. */
  early: { rssMb: number; fds: number };
  late: { rssMb: number; fds: number };
  max: { rssMb: number; fds: number };
  /** Least-squares slopes over the samples after the first 10% of the run, per hour. */
  perHour: { rssMb: number; fds: number };
}

export interface SoakProcess {
  name: string;
  role: Role;
  pid: number | undefined;
}

export class Soak {
  private readonly samples: Sample[] = [];
  private readonly roles = new Map<string, Role>();
  private timer?: NodeJS.Timeout;
  private readonly start = Date.now();

  constructor(
    private readonly processes: () => SoakProcess[],
    intervalMs: number,
  ) {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  sample(): void {
    for (const { name, role, pid } of this.processes()) {
      if (!pid) continue;
      this.roles.set(name, role);
      try {
        const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
        const fds = readdirSync(`/proc/${pid}/fd`).length;
        if (rss) this.samples.push({ t: Date.now() - this.start, name, rssKb: Number(rss[1]), fds });
      } catch {
        // the process just ended (a replica killed by the nemesis)
      }
    }
  }

  stop(): SoakSummary[] {
    clearInterval(this.timer);
    const end = Date.now() - this.start;
    const mean = (xs: Sample[]) => ({
      rssMb: xs.length ? round(xs.reduce((a, s) => a + s.rssKb, 0) / xs.length / 1024) : 0,
      fds: xs.length ? round(xs.reduce((a, s) => a + s.fds, 0) / xs.length) : 0,
    });
    const byName = new Map<string, Sample[]>();
    for (const s of this.samples) {
      const xs = byName.get(s.name);
      if (xs) xs.push(s);
      else byName.set(s.name, [s]);
    }
    return [...byName].map(([name, xs]) => {
      const settled = xs.filter((s) => s.t >= end * 0.1);
      return {
        name,
        role: this.roles.get(name)!,
        early: mean(xs.filter((s) => s.t >= end * 0.1 && s.t <= end * 0.25)),
        late: mean(xs.filter((s) => s.t >= end * 0.85)),
        max: { rssMb: round(xs.reduce((m, s) => Math.max(m, s.rssKb), 0) / 1024), fds: xs.reduce((m, s) => Math.max(m, s.fds), 0) },
        perHour: { rssMb: round(slopePerHour(settled, (s) => s.rssKb / 1024)), fds: round(slopePerHour(settled, (s) => s.fds)) },
      };
    });
  }

  /** Every sample, one line each: seconds since the start, process, RSS in kB, open descriptors. */
  writeCsv(file: string): void {
    writeLines(file, ["seconds,process,rss_kb,fds", ...this.samples.map((s) => `${(s.t / 1000).toFixed(1)},${s.name},${s.rssKb},${s.fds}`)]);
  }
}

function slopePerHour(xs: Sample[], y: (s: Sample) => number): number {
  if (xs.length < 2) return 0;
  const n = xs.length;
  const mt = xs.reduce((a, s) => a + s.t, 0) / n;
  const my = xs.reduce((a, s) => a + y(s), 0) / n;
  const cov = xs.reduce((a, s) => a + (s.t - mt) * (y(s) - my), 0);
  const vt = xs.reduce((a, s) => a + (s.t - mt) ** 2, 0);
  return vt === 0 ? 0 : (cov / vt) * 3_600_000;
}

const round = (x: number) => Math.round(x * 10) / 10;
