// `npm run faults -- [--ops N] [--seed S] [--short] [--max-minutes M] [--history file.jsonl]`: a fault
// run, its table and its fault log; exits 1 when the checker found a violation. The long profile by
// default (8 clients, 3 replicas, RSS and open descriptors sampled), the short one (npm test's) with
// --short. --max-minutes ends a run short of its operations (it still has every fault once).
import { writeFileSync } from "node:fs";
import { LONG, runProfile, SHORT, type ProfileOptions } from "./profile.js";
import { report, totalViolations } from "./report.js";

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const seed = Number(flag("--seed") ?? process.env.FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const short = args.includes("--short");
const options: ProfileOptions = short
  ? { ...SHORT, seed, ops: Number(flag("--ops") ?? SHORT.ops) }
  : { ...LONG, seed, ops: Number(flag("--ops") ?? 100_000) };
console.log(`seed ${seed}`);
const maxMinutes = Number(flag("--max-minutes") ?? 0);
const result = await runProfile({ ...options, maxMs: maxMinutes * 60_000, log: (l) => console.log(l) });
console.log("\nfaults injected:\n  " + result.faultLog.join("\n  "));
console.log("\n" + report(result));
const historyFile = flag("--history");
if (historyFile) {
  writeFileSync(historyFile, result.ops.map((op) => JSON.stringify(op)).join("\n") + "\n");
  console.log(`history: ${historyFile}`);
}
process.exit(totalViolations(result) === 0 ? 0 : 1);
