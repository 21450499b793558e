// The top entries of a V8 CPU profile (.cpuprofile) by self time: what --profile prints at the end, so
// that a run's hot spots can be compared before and after a change without opening DevTools.
import { readFileSync } from "node:fs";
import { basename, relative } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
}

export interface Entry {
  name: string;
  /** Share of the samples in which the process was not idle. */
  share: number;
}

/** The `count` functions with the most self time, as shares of the busy samples. */
export function topEntries(file: string, count = 12): { busySamples: number; entries: Entry[] } {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let busy = 0;
  for (const id of profile.samples) {
    const frame = byId.get(id)?.callFrame;
    if (!frame || frame.functionName === "(idle)") continue;
    busy++;
    const where = frame.url ? ` ${shorten(frame.url)}:${frame.lineNumber + 1}` : "";
    const name = `${frame.functionName || "(anonymous)"}${where}`;
    self.set(name, (self.get(name) ?? 0) + 1);
  }
  const entries = [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, n]) => ({ name, share: n / Math.max(1, busy) }));
  return { busySamples: busy, entries };
}

/** Paths relative to the repository, node_modules shortened to the package. */
function shorten(url: string): string {
  const path = url.replace(/^file:\/\//, "");
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  if (m) return `${m[1]}/${basename(m[2])}`;
  return path.startsWith("/") ? relative(process.cwd(), path) : path;
}
