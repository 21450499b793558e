// The long run's entry point (scripts/fuzz.sh): `node --import tsx test/fuzz/main.ts [requests] [seed]`.
// Prints the seed first, progress as it goes, then the tables; exits 1 if any invariant was broken.
import { runFuzz } from "./run.js";

const requests = Number(process.argv[2] ?? process.env.FUZZ_REQUESTS ?? 1_000_000);
const seed = Number(process.argv[3] ?? process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const concurrency = process.env.FUZZ_CONCURRENCY ? Number(process.env.FUZZ_CONCURRENCY) : undefined;
if (!Number.isSafeInteger(requests) || requests < 1 || !Number.isSafeInteger(seed)) {
  process.stderr.write("usage: fuzz.sh [requests] [seed]   (or FUZZ_REQUESTS, FUZZ_SEED)\n");
  process.exit(2);
}
process.stdout.write(`fuzz seed ${seed} (FUZZ_SEED=${seed} reproduces this run)\n`);
// FUZZ_ONLY=12,345: send only these cases of the run (a failure's case number, from its report).
const only = process.env.FUZZ_ONLY ? new Set(process.env.FUZZ_ONLY.split(",").map(Number)) : undefined;
const verbose = process.env.FUZZ_VERBOSE === "1";
// Ctrl-C or SIGTERM: stop sending, check what was sent, and stop the servers and etcd this run started.
const stop = new AbortController();
for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => stop.abort());
const r = await runFuzz({ requests, seed, concurrency, only, verbose, signal: stop.signal, log: (l) => process.stdout.write(`${new Date().toISOString()} ${l}\n`) });
process.stdout.write(`\n${r.findings.table()}\n\n${r.findings.requests} calls in ${(r.ms / 1000).toFixed(0)} s, seed ${seed}\n`);
process.exit(r.findings.broken.length > 0 ? 1 : 0);
