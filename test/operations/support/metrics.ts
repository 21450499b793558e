// Reads the Prometheus endpoint as Prometheus would: the text exposition format, parsed strictly
// enough that a malformed line fails the test.
import type { TestServer } from "../../harness/server.js";

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export class Scrape {
  constructor(
    readonly samples: Sample[],
    readonly types: Map<string, string>,
  ) {}

  /** The value of the one sample with this name and these labels (among others); 0 when absent. */
  value(name: string, labels: Record<string, string> = {}): number {
    const found = this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
    return found[0]?.value ?? 0;
  }
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;

export function parseExposition(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("# TYPE ")) {
      const [, , name, type] = line.split(" ");
      types.set(name, type);
      continue;
    }
    if (line.startsWith("#")) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      LABEL.lastIndex = 0;
      let consumed = 0;
      for (let l = LABEL.exec(m[2]); l; l = LABEL.exec(m[2])) {
        labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
        consumed = LABEL.lastIndex;
      }
      if (consumed !== m[2].length) throw new Error(`bad labels in: ${line}`);
    }
    // Prometheus reads values as Go's ParseFloat does: NaN and Inf in any case (prom-client writes "Nan").
    const special = /^([+-]?)(inf|infinity|nan)$/i.exec(m[3]);
    const value = special ? (special[2].toLowerCase() === "nan" ? NaN : Number(`${special[1]}Infinity`)) : Number(m[3]);
    if (!special && (m[3] === "" || Number.isNaN(value))) throw new Error(`bad value in: ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return new Scrape(samples, types);
}

/** The metrics URL the server logged at start. */
export function metricsUrl(server: TestServer): string {
  for (const line of server.logs) {
    try {
      const entry = JSON.parse(line);
      if (entry.msg === "metrics") return entry.url;
    } catch {
      // not a log line
    }
  }
  throw new Error("the server logged no metrics URL");
}

export async function scrape(server: TestServer): Promise<Scrape> {
  const res = await fetch(metricsUrl(server));
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  if (!res.headers.get("content-type")?.startsWith("text/plain; version=0.0.4")) {
    throw new Error(`unexpected content type ${res.headers.get("content-type")}`);
  }
  return parseExposition(await res.text());
}
