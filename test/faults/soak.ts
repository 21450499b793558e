// Soak figures of a long run: the resident memory and open file descriptors (sockets, files, pipes:
// the handles that leak) of each server replica and client process, sampled from /proc as the run goes,
// and summed up as early (after warm-up) against late, per role.
import { readdirSync, readFileSync } from "node:fs";

export type Role = "server" | "client";

interface Sample {
  t: number;
  role: Role;
  rssKb: number;
  fds: number;
}

export interface SoakSummary {
  role: Role;
  /** Means per process over the samples of 10-25% of the run, and of its last 15%. */
  early: { rssMb: number; fds: number };
  late: { rssMb: number; fds: number };
  max: { rssMb: number; fds: number };
}

export class Soak {
  private readonly samples: Sample[] = [];
  private timer?: NodeJS.Timeout;
  private readonly start = Date.now();

  constructor(
    private readonly processes: () => { role: Role; pid: number | undefined }[],
    intervalMs: number,
  ) {
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.timer.unref();
  }

  sample(): void {
    for (const { role, pid } of this.processes()) {
      if (!pid) continue;
      try {
        const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
        const fds = readdirSync(`/proc/${pid}/fd`).length;
        if (rss) this.samples.push({ t: Date.now() - this.start, role, rssKb: Number(rss[1]), fds });
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
    return (["server", "client"] as Role[]).map((role) => {
      const xs = this.samples.filter((s) => s.role === role);
      return {
        role,
        early: mean(xs.filter((s) => s.t >= end * 0.1 && s.t <= end * 0.25)),
        late: mean(xs.filter((s) => s.t >= end * 0.85)),
        max: { rssMb: round(Math.max(0, ...xs.map((s) => s.rssKb)) / 1024), fds: Math.max(0, ...xs.map((s) => s.fds)) },
      };
    });
  }
}

const round = (x: number) => Math.round(x * 10) / 10;
