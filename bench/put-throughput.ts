// Baseline: fenced Put through fencekeeper beside the same work written by hand with etcd3 (one
// conditional transaction per write), with 1 and 64 writers, in one run on one etcd.
// Prints a table; writes JSON to bench/results/put-throughput.json. Not a test: no target to meet.
//   npm run bench                 (BENCH_SECONDS=5 per scenario by default)
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { Etcd3 } from "etcd3";
import { startEtcd } from "../test/harness/etcd.js";
import { startServer } from "../test/harness/server.js";
import { clientsFor } from "../test/harness/clients.js";
import { encodeGeneration } from "../server/etcd/keys.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const VALUE = Buffer.alloc(100, "v");

interface Result {
  path: "fencekeeper" | "etcd3 by hand";
  writers: number;
  writes: number;
  perSecond: number;
  p50ms: number;
  p99ms: number;
}

/** Runs `writers` loops of write() for SECONDS seconds; returns throughput and latency percentiles. */
async function measure(path: Result["path"], writers: number, write: (writer: number, i: number) => Promise<void>): Promise<Result> {
  // Warm up connections and code paths first.
  await Promise.all(Array.from({ length: writers }, (_, w) => write(w, -1)));
  const latencies: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; performance.now() < end; i++) {
        const t = performance.now();
        await write(w, i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))];
  return { path, writers, writes: latencies.length, perSecond: latencies.length / elapsed, p50ms: pct(50), p99ms: pct(99) };
}

async function main() {
  const etcd = await startEtcd();
  // Info, not the harness's debug: a log line per call would be measured too.
  const server = await startServer({ etcd: etcd.endpoint, args: ["--log-level", "info"] });
  const direct = new Etcd3({ hosts: etcd.endpoint });
  try {
    const { lease, store } = clientsFor(server.url);
    const resource = "bench";
    const { token } = await lease.acquire({ resource, ttl: { seconds: 300n, nanos: 0 }, holder: "bench" });

    const viaService = (writer: number, i: number) =>
      store.put({ resource, key: `w${writer}/${i}`, value: VALUE, mutation: { token } }).then(() => undefined);

    // The hand-written peer: the same fencing rule as one etcd transaction per write, no service between.
    const fence = Buffer.from("/bench-direct/fence");
    const generation = token!.generation;
    await direct.put(fence).value(encodeGeneration(0n));
    const byHand = async (writer: number, i: number) => {
      const res = await direct.kv.txn({
        compare: [{ key: fence, target: "Value", result: "Less", value: encodeGeneration(generation + 1n) }],
        success: [
          { request_put: { key: Buffer.from(`/bench-direct/d/w${writer}/${i}`), value: VALUE } },
          { request_put: { key: fence, value: encodeGeneration(generation) } },
        ],
        failure: [],
      });
      if (!res.succeeded) throw new Error("refused");
    };

    const results: Result[] = [];
    for (const writers of [1, 64]) {
      results.push(await measure("fencekeeper", writers, viaService));
      results.push(await measure("etcd3 by hand", writers, byHand));
    }

    const rows = results.map((r) => {
      const peer = results.find((p) => p.writers === r.writers && p.path === "etcd3 by hand")!;
      return { ...r, ratio: r.perSecond / peer.perSecond };
    });
    console.log(`\nfenced Put, ${VALUE.length}-byte values, ${SECONDS} s per row, one etcd node, ${cpus().length} cores\n`);
    console.log("path            writers    writes   writes/s   p50 ms   p99 ms   vs by hand");
    for (const r of rows) {
      console.log(
        `${r.path.padEnd(15)} ${String(r.writers).padStart(7)} ${String(r.writes).padStart(9)} ${r.perSecond.toFixed(0).padStart(10)} ` +
          `${r.p50ms.toFixed(2).padStart(8)} ${r.p99ms.toFixed(2).padStart(8)} ${r.ratio.toFixed(2).padStart(11)}x`,
      );
    }
    mkdirSync("bench/results", { recursive: true });
    writeFileSync(
      "bench/results/put-throughput.json",
      JSON.stringify({ date: new Date().toISOString(), seconds: SECONDS, valueBytes: VALUE.length, cores: cpus().length, rows }, null, 2) + "\n",
    );
    console.log("\nJSON: bench/results/put-throughput.json");
  } finally {
    direct.close();
    await server.stop();
    await etcd.destroy();
  }
}

await main();
