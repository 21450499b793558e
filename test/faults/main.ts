// `npm run faults -- [--ops N] [--seed S] [--short] [--max-minutes M] [--history file.jsonl]`: a fault
// run, its schedule of faults and its table; exits 1 when the checker found a violation or the run fell
// short of its floor of acknowledged operations. The long profile by
// default (24 clients, 3 replicas, RSS and open descriptors of every process sampled), the short one (npm test's) with
// --short. --max-minutes ends a run short of its operations (it still has every fault once).
// --history keeps the run (client history, and etcd's beside it); `--recheck file.jsonl` checks a kept
// run again. --workers, --resources and --replicas change the profile's counts.
import { policyDenies } from "./auth.js";
import { check, PROPERTIES, type Property } from "./checker.js";
import { Layout } from "./layout.js";
import { ABUSE_NEMESES, ALL_NEMESES, NEMESES, type Nemesis } from "./nemesis.js";
import { PARTITION_NEMESES } from "./partitions.js";
import { disruptionsOf, noSpaceOf, LONG, PREFIX, runProfile, SHORT, type ProfileOptions } from "./profile.js";
import { belowFloors, report, totalViolations } from "./report.js";
import { loadRun } from "./saved-run.js";

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
// Ctrl-C: exit through the exit handlers, which stop every process the run started.
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

const recheck = flag("--recheck");
if (recheck) {
  const { ops, truth, resources, schedule } = loadRun(recheck);
  const r = check(ops, truth, new Layout(PREFIX), resources, disruptionsOf(schedule), policyDenies, noSpaceOf(schedule));
  console.log(`${ops.length} operations, ${truth.events.length} etcd events`);
  for (const p of Object.keys(PROPERTIES) as Property[]) console.log(`${p.padEnd(10)} ${String(r.violations[p].count).padStart(6)}  ${r.violations[p].first ?? "-"}`);
  process.exit(Object.values(r.violations).every((v) => v.count === 0) ? 0 : 1);
}

const seed = Number(flag("--seed") ?? process.env.FAULTS_SEED ?? Math.floor(Math.random() * 2 ** 31));
const short = args.includes("--short");
const options: ProfileOptions = short
  ? { ...SHORT, seed, ops: Number(flag("--ops") ?? SHORT.ops) }
  : { ...LONG, seed, ops: Number(flag("--ops") ?? 100_000) };
// --nemeses all (the long profile's default), process (no network namespaces: no root needed), abuse
// (the KeepAlive flood and etcd's quota),
// network (the partitions alone), or a comma-separated list of names.
for (const k of ["workers", "resources", "replicas"] as const) {
  const v = flag(`--${k}`);
  if (v !== undefined) options[k] = Number(v);
}
const nemesesFlag = flag("--nemeses");
if (nemesesFlag !== undefined) options.nemeses = parseNemeses(nemesesFlag);
else if (!short) options.nemeses = ALL_NEMESES;
console.log(`seed ${seed}`);
const maxMinutes = Number(flag("--max-minutes") ?? 0);
const historyFile = flag("--history");
const result = await runProfile({ ...options, maxMs: maxMinutes * 60_000, history: historyFile, log: (l) => console.log(l) });
console.log("\nthe schedule of faults (start to end, since the run began: nemesis on target: what):\n  " + result.faultLog.join("\n  "));
console.log("\n" + report(result));
const belowFloor = belowFloors(result);
if (belowFloor.length > 0) console.log(`\nacknowledged operations below the floor: ${belowFloor.join(", ")}`);
process.exit(totalViolations(result) === 0 && belowFloor.length === 0 ? 0 : 1);

function parseNemeses(v: string): readonly Nemesis[] {
  const named: Record<string, readonly Nemesis[]> = { all: ALL_NEMESES, process: NEMESES, abuse: ABUSE_NEMESES, network: PARTITION_NEMESES };
  if (named[v]) return named[v];
  const kinds = v.split(",").filter(Boolean);
  const unknown = kinds.filter((k) => !(ALL_NEMESES as readonly string[]).includes(k));
  if (unknown.length > 0 || kinds.length === 0) {
    console.error(`--nemeses: unknown ${unknown.join(", ") || "(empty)"}; choose all, process, abuse, network, or names among: ${ALL_NEMESES.join(", ")}`);
    process.exit(2);
  }
  return kinds as Nemesis[];
}
