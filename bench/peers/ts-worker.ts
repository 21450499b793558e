// The TypeScript worker of the peers benchmark: the Go worker's workloads and protocol
// (bench/peers/go/main.go) on fencekeeper's TypeScript client (client/).
//   node --import tsx bench/peers/ts-worker.ts --system fk|fk-sessions --workload W ...
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { FencekeeperClient, type Lease } from "../../client/index.js";
import { StaleTokenError } from "../../client/errors.js";

const { values: a } = parseArgs({
  options: Object.fromEntries(["system", "workload", "prefix", "fk", "etcd", "redis", "zk", "lockers", "seconds", "ttl", "count"].map((k) => [k, { type: "string" as const }])),
  strict: true,
});
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const emit = (v: Record<string, unknown>) => process.stdout.write(JSON.stringify(v) + "\n");
async function await_(word: string): Promise<void> {
  const { value, done } = await lines.next();
  if (done) process.exit(0); // the driver went away
  if (String(value).trim() !== word) throw new Error(`expected "${word}" from the driver, got "${value}"`);
}
const percentile = (xs: number[], p: number) => {
  if (xs.length === 0) return -1;
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.round(p * (s.length - 1))];
};

if (a.system !== "fk" && a.system !== "fk-sessions") throw new Error(`unknown --system "${a.system}"`);
const ttl = Number(a.ttl ?? "10") * 1000;
const prefix = a.prefix ?? "peers";
const seconds = Number(a.seconds ?? "5");
const open = () => new FencekeeperClient({ servers: [a.fk!], sessions: a.system === "fk-sessions", holder: "bench-peers" });
const acquire = (c: FencekeeperClient, resource: string) => c.acquire(resource, { ttl, wait: true });

/** Each level of lockers in turn, a ready/go/done exchange each. */
async function cycles(levels: number[]): Promise<void> {
  const c = open();
  for (const lockers of levels) await cyclesAt(c, lockers);
  await await_("close");
  await c.close();
}

async function cyclesAt(c: FencekeeperClient, lockers: number): Promise<void> {
  let firstError = "";
  const run = async (ms: number, lat?: number[]) => {
    let ops = 0;
    let errors = 0;
    const deadline = performance.now() + ms;
    await Promise.all(
      Array.from({ length: lockers }, async (_, w) => {
        while (performance.now() < deadline) {
          const start = performance.now();
          try {
            await (await acquire(c, `${prefix}-${lockers}-${w}`)).release();
            ops++;
            lat?.push(performance.now() - start);
          } catch (err) {
            errors++;
            firstError ||= (err as Error).message;
            await new Promise((r) => setTimeout(r, 10));
          }
        }
      }),
    );
    return { ops, errors };
  };
  await run(Math.min(1, seconds / 4) * 1000);
  emit({ event: "ready" });
  await await_("go");
  const lat: number[] = [];
  const start = performance.now();
  const { ops, errors } = await run(seconds * 1000, lat);
  const elapsed = (performance.now() - start) / 1000;
  emit({ event: "done", cycles: ops, errors, firstError, seconds: elapsed, perSecond: ops / elapsed, p50Ms: percentile(lat, 0.5), p99Ms: percentile(lat, 0.99) });
}

async function handover(): Promise<void> {
  const holder = open();
  const waiter = open();
  const resource = `${prefix}-handover`;
  const one = async () => {
    const h = await acquire(holder, resource);
    let grantedAt = 0;
    const granted = acquire(waiter, resource).then((l) => ((grantedAt = performance.now()), l));
    await new Promise((r) => setTimeout(r, 20));
    const start = performance.now();
    await h.release();
    const released = performance.now() - start;
    const w = await granted;
    await w.release();
    return [grantedAt - start, released];
  };
  for (let i = 0; i < 3; i++) await one();
  emit({ event: "ready" });
  await await_("go");
  const lat: number[] = [];
  const rel: number[] = [];
  let errors = 0;
  let firstError = "";
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline || lat.length < 5) {
    try {
      const [d, r] = await one();
      lat.push(d);
      rel.push(r);
    } catch (err) {
      errors++;
      firstError ||= (err as Error).message;
      if (errors > 10) break;
    }
  }
  emit({ event: "done", handovers: lat.length, errors, firstError, p50Ms: percentile(lat, 0.5), p99Ms: percentile(lat, 0.99), releaseP50Ms: percentile(rel, 0.5) });
  await await_("close");
  await holder.close();
  await waiter.close();
}

async function write(c: FencekeeperClient, lease: Lease, value: string) {
  const how = "fenced store Put with the holder's token";
  try {
    await c.store.put(lease.token, "k", Buffer.from(value));
    return [{ how, accepted: true }];
  } catch (err) {
    return [{ how, accepted: false, error: err instanceof StaleTokenError ? "refused by the fenced store: stale token" : (err as Error).message }];
  }
}

switch (a.workload) {
  case "cycles":
    await cycles((a.lockers ?? "1").split(",").map(Number));
    break;
  case "handover":
    await handover();
    break;
  case "crash-holder": {
    await acquire(open(), `${prefix}-crash`);
    emit({ event: "held" });
    await new Promise(() => undefined); // until killed
    break;
  }
  case "crash-waiter": {
    const c = open();
    emit({ event: "waiting" });
    const l = await acquire(c, `${prefix}-crash`);
    emit({ event: "granted" });
    await l.release();
    await c.close();
    break;
  }
  case "timeline-holder": {
    const c = open();
    const l = await acquire(c, `${prefix}-timeline`);
    await write(c, l, "holder-before-pause");
    emit({ event: "held" });
    await await_("write");
    emit({ event: "done", writes: await write(c, l, "holder-after-pause"), believedHeld: l.held });
    break;
  }
  case "timeline-other": {
    const c = open();
    const l = await acquire(c, `${prefix}-timeline`);
    emit({ event: "done", writes: await write(c, l, "next-holder") });
    await await_("release");
    await l.release();
    await c.close();
    break;
  }
  default:
    throw new Error(`unknown --workload "${a.workload}"`);
}
process.exit(0);
