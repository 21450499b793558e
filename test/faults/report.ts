// The table a fault run prints: operations by kind and outcome, faults by kind, what became of the
// writes, violations per property (with the first example), and the soak figures of a long run.
import { MTLS_CLIENTS } from "./auth.js";
import { PROPERTIES, type Property } from "./checker.js";
import { principalOf, type Op, type OpKind, type Outcome } from "./history.js";
import { overlapsOf, type RunResult } from "./profile.js";

const KINDS: OpKind[] = ["acquire", "renew", "release", "put", "delete", "txn", "proclaim", "observe", "open-session", "close-session"];
const OUTCOMES: Outcome[] = ["ok", "fail", "ambiguous", "unsent"];

export function totalViolations(r: RunResult): number {
  return Object.values(r.check.violations).reduce((a, v) => a + v.count, 0);
}

/** The kinds whose acknowledged operations fell short of the run's floor, as "kind ok/floor". */
export function belowFloors(r: RunResult): string[] {
  const floors = r.options.floors;
  if (!floors) return [];
  return KINDS.map((k) => [k, r.ops.filter((op) => op.kind === k && op.outcome === "ok").length, floors[k] ?? 0] as const)
    .filter(([, n, f]) => n < f)
    .map(([k, n, f]) => `${k} ${n}/${f}`);
}

/**
 * How soon renewals work again once etcd is back (a restart of every member, or a killed leader
 * restarted): per such fault, the first plain-gRPC renewal invoked after its end and answered ok; and
 * the renewals invoked from 1 s after an end to 5 s after it, by outcome (another fault may overlap).
 */
export function renewalsAfterEtcd(r: RunResult): string {
  const ends = r.schedule.filter((f) => f.nemesis === "restart-etcd" || f.nemesis === "kill-etcd-leader").map((f) => f.end);
  const renewals = r.ops.filter((op) => op.kind === "renew");
  const firsts: number[] = [];
  const later = { ok: 0, fail: 0, ambiguous: 0, unsent: 0 };
  for (const e of ends) {
    const first = renewals.reduce((m, op) => (op.t0 >= e && op.outcome === "ok" ? Math.min(m, op.t1 - e) : m), Infinity);
    if (first < Infinity) firsts.push(first);
    for (const op of renewals) if (op.t0 >= e + 1_000 && op.t0 < e + 5_000) later[op.outcome]++;
  }
  firsts.sort((a, b) => a - b);
  const median = firsts.length > 0 ? firsts[firsts.length >> 1] : NaN;
  return `renewals after etcd came back (${ends.length} restarts and leader kills): the first ok ${median} ms after (median), ${firsts.at(-1) ?? NaN} ms at most; invoked 1 to 5 s after: ${later.ok} ok, ${later.ambiguous} ambiguous, ${later.fail} refused`;
}

/**
 * The abuse nemeses' lines: the workload's renewals invoked while a KeepAlive flood ran, by outcome (a
 * refusal would be one lost to the flood); and the calls refused for etcd's space, with how soon after
 * each heal a write of the workload was acknowledged again.
 */
export function abuseLines(r: RunResult): string[] {
  const lines: string[] = [];
  const floods = r.schedule.filter((f) => f.nemesis === "keepalive-flood");
  if (floods.length > 0) {
    const f = floodRenewals(r);
    lines.push(
      `renewals of live leases (renewed or granted less than a TTL before, with 500 ms of it left, not released, by their own principal) invoked during the ${floods.length} KeepAlive floods: ${f.all.ok} ok, ${f.all.ambiguous} ambiguous, ${f.all.fail} refused; ` +
        `during the ${f.alone} floods that overlapped no other fault: ${f.aloneCounts.ok} ok, ${f.aloneCounts.ambiguous} ambiguous, ${f.aloneCounts.fail} refused (a lease lost to the flood would be one of the last two); ` +
        `the slowest renewal answered during those floods took ${f.slowestAlone} ms, the slowest while no fault ran ${f.slowestCalm} ms`,
    );
  }
  const fills = r.schedule.filter((f) => f.nemesis === "etcd-quota");
  if (fills.length > 0) {
    const refused = r.ops.filter((op) => op.reason === "ETCD_NO_SPACE");
    const kinds = [...new Set(refused.map((op) => op.kind))].map((k) => `${k} ${refused.filter((op) => op.kind === k).length}`);
    // (A reduce, not Math.min(...): a long run has more acknowledged writes than a call takes arguments.)
    const writesOk = r.ops.filter((op) => (op.kind === "put" || op.kind === "delete" || op.kind === "txn") && op.outcome === "ok");
    const after = fills.map((f) => writesOk.reduce((m, op) => (op.t0 >= f.end ? Math.min(m, op.t1 - f.end) : m), Infinity)).sort((a, b) => a - b);
    lines.push(`etcd filled to its quota ${fills.length} times: ${refused.length} calls refused ETCD_NO_SPACE (${kinds.join(", ") || "none"}); the first write acknowledged after a heal: ${after[after.length >> 1]} ms (median), ${after.at(-1)} ms at most`);
  }
  return lines;
}

/** How much of its TTL a lease must have left when a renewal is sent during a flood, for its loss to be the flood's. */
const LIVE_MARGIN_MS = 500;

/**
 * The workload's renewals invoked while a KeepAlive flood ran, of leases that were alive then (a grant,
 * OpenSession or renewal of the lease answered ok less than its TTL before): by outcome, for every flood
 * and for the floods that overlapped no other fault (there, any refusal or timeout is the flood's).
 */
export function floodRenewals(r: RunResult): { all: Record<Outcome, number>; alone: number; aloneCounts: Record<Outcome, number>; reasons: string[]; slowestAlone: number; slowestCalm: number } {
  const floods = r.schedule.filter((f) => f.nemesis === "keepalive-flood");
  const alone = floods.filter((f) => !r.schedule.some((g) => g !== f && g.start < f.end && f.start < g.end));
  const ttl = new Map<string, number>();
  const kept = new Map<string, [number, number][]>();
  const acquiredBy = new Map<string, string>();
  for (const op of r.ops) {
    if (op.outcome !== "ok" || op.lease === undefined) continue;
    if ((op.kind === "acquire" && op.session === undefined) || op.kind === "open-session") {
      ttl.set(op.lease, op.ttlMs ?? 0);
      acquiredBy.set(op.lease, principalOf(op));
    }
    if (op.kind === "renew" || (op.kind === "acquire" && op.session === undefined) || op.kind === "open-session") kept.set(op.lease, [...(kept.get(op.lease) ?? []), [op.t0, op.t1]]);
  }
  // Answered before the renewal was sent, and kept the lease a TTL past its own invocation, with
  // LIVE_MARGIN_MS of it left when the renewal was sent: one sent in its lease's last moments may reach
  // etcd after the TTL on a loaded machine, whatever the flood does.
  const live = (op: Op) => (kept.get(op.lease ?? "") ?? []).some(([t0, t1]) => t1 < op.t0 && op.t0 < t0 + (ttl.get(op.lease!) ?? 0) - LIVE_MARGIN_MS);
  // Renewals by the lease's own principal (the impostor's are refused NOT_HOLDER, rightly), of a lease no
  // preemption ended (PREEMPTED is the workload's own doing).
  const own = (op: Op) => op.reason !== "NOT_HOLDER" && op.reason !== "PREEMPTED" && (acquiredBy.get(op.lease ?? "") ?? principalOf(op)) === principalOf(op);
  // Of a lease not given up before (a batched KeepAlive also names the leases of tokens released since).
  const endedAt = new Map<string, number>();
  for (const op of r.ops) if ((op.kind === "release" || op.kind === "close-session") && op.lease !== undefined) endedAt.set(op.lease, Math.min(endedAt.get(op.lease) ?? Infinity, op.t0));
  const notGivenUp = (op: Op) => (endedAt.get(op.lease ?? "") ?? Infinity) >= op.t1;
  const reasons: string[] = [];
  const count = (fs: typeof floods) => {
    const c: Record<Outcome, number> = { ok: 0, fail: 0, ambiguous: 0, unsent: 0 };
    for (const op of r.ops) {
      if (op.kind !== "renew" || !fs.some((f) => op.t0 >= f.start && op.t0 <= f.end) || !live(op) || !own(op) || !notGivenUp(op)) continue;
      c[op.outcome]++;
      if (op.outcome !== "ok" && fs === alone) reasons.push(`${op.client} renew #${op.seq} of lease ${op.lease}: ${op.outcome} ${op.reason ?? op.code}`);
    }
    return c;
  };
  // How long renewals took during the floods alone, beside those invoked while no fault ran: what a
  // refusal is judged against when one comes.
  const slowest = (ops: Op[]) => ops.reduce((m, op) => Math.max(m, op.t1 - op.t0), 0);
  const renewals = r.ops.filter((op) => op.kind === "renew" && op.outcome !== "unsent");
  const slowestAlone = slowest(renewals.filter((op) => alone.some((f) => op.t0 >= f.start && op.t0 <= f.end)));
  const slowestCalm = slowest(renewals.filter((op) => !r.schedule.some((f) => op.t0 >= f.start && op.t0 <= f.end)));
  return { all: count(floods), alone: alone.length, aloneCounts: count(alone), reasons, slowestAlone, slowestCalm };
}

export function report(r: RunResult): string {
  const lines: string[] = [];
  const row = (cells: (string | number)[], widths: number[]) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join("  ");
  const o = r.options;
  lines.push(`fault run: seed ${o.seed} (FAULTS_SEED=${o.seed} reproduces its choices), ${r.ops.length} operations, ${o.workers} clients, ${o.replicas} replicas, 3 etcd members, ${(r.durationMs / 1000).toFixed(0)} s`);
  lines.push("");
  const w1 = [13, 8, 8, 10, 8, 8, 8];
  lines.push(row(["operation", ...OUTCOMES, "total", ...(o.floors ? ["ok floor"] : [])], w1));
  const total = Object.fromEntries(OUTCOMES.map((x) => [x, 0])) as Record<Outcome, number>;
  for (const k of KINDS) {
    const of = r.ops.filter((op) => op.kind === k);
    const counts = OUTCOMES.map((x) => of.filter((op) => op.outcome === x).length);
    counts.forEach((n, i) => (total[OUTCOMES[i]] += n));
    lines.push(row([k, ...counts, of.length, ...(o.floors ? [o.floors[k] ?? ""] : [])], w1));
  }
  lines.push(row(["all", ...OUTCOMES.map((x) => total[x]), r.ops.length], w1));
  lines.push("");
  const reasons = new Map<string, number>();
  for (const op of r.ops) if (op.outcome !== "ok") reasons.set(`${op.kind} ${op.outcome} ${op.reason ?? op.code}`, (reasons.get(`${op.kind} ${op.outcome} ${op.reason ?? op.code}`) ?? 0) + 1);
  lines.push("failures by reason: " + [...reasons].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join("; "));
  lines.push("");
  lines.push(row(["fault", "count"], [20, 6]));
  for (const [k, n] of r.faults) lines.push(row([k, n], [20, 6]));
  lines.push(`${r.schedule.length} faults; ${overlapsOf(r.schedule)} pairs of them overlapped in time`);
  lines.push("");
  const w = r.check.writes;
  lines.push(renewalsAfterEtcd(r));
  const batched = r.ops.filter((op) => op.batch);
  const coalesced = r.ops.filter((op) => op.coalesced);
  lines.push(`writes several at once, each judged on its own: in explicit Batch calls ${batched.filter((op) => op.outcome === "ok").length} ok of ${batched.length}; concurrent through the SDK's coalescing writer ${coalesced.filter((op) => op.outcome === "ok").length} ok of ${coalesced.length}`);
  lines.push(...abuseLines(r));
  lines.push(`refusals judged against etcd's history: ${r.check.refusalsJudged}`);
  const okOf = (c: string) => r.ops.filter((op) => op.client === c && op.outcome === "ok").length;
  const mtls = [...new Set(r.ops.map((op) => op.client))].filter((c) => MTLS_CLIENTS.includes(c)).sort();
  lines.push(`clients named by their certificate (mutual TLS, no token): ${mtls.map((c) => `${c} ${okOf(c)} ok of ${r.ops.filter((op) => op.client === c).length}`).join(", ") || "none"}; the others by a JWT`);
  lines.push(`refusals by policy (PERMISSION_DENIED), judged against the run's policy: ${r.check.policyRefusals}; by holder binding (NOT_HOLDER: another principal's token or lease), judged against who acquired it: ${r.check.bindingRefusals}`);
  const preempts = r.ops.filter((o) => o.kind === "acquire" && o.preempt);
  lines.push(`preempting Acquires: ${preempts.filter((o) => o.outcome === "ok").length} ok of ${preempts.length}; renewals answered PREEMPTED: ${r.ops.filter((o) => o.reason === "PREEMPTED").length}`);
  lines.push(`writes (a write and its retries once): ${w.acknowledged} acknowledged, ${w.refused} refused, ambiguous ${w.ambiguousCommitted + w.ambiguousNotCommitted} (${w.ambiguousCommitted} committed, ${w.ambiguousNotCommitted} not, by etcd's history); ${r.check.grants} grants; ${r.check.events} etcd events`);
  lines.push("");
  lines.push(row(["property", "violations"], [10, 10]) + "  first example");
  for (const [p, text] of Object.entries(PROPERTIES)) {
    const v = r.check.violations[p as Property];
    lines.push(row([p, v.count], [10, 10]) + `  ${v.first ?? "-"}`);
    lines.push(`${" ".repeat(22)}(${text})`);
  }
  if (r.soak) {
    lines.push("");
    const w = [16, 10, 10, 10, 12, 9, 9, 9, 10];
    lines.push(row(["soak", "RSS early", "RSS late", "RSS max", "RSS trend", "fds early", "fds late", "fds max", "fds trend"], w));
    for (const s of r.soak) {
      lines.push(row([s.name, `${s.early.rssMb} MB`, `${s.late.rssMb} MB`, `${s.max.rssMb} MB`, `${s.perHour.rssMb} MB/h`, s.early.fds, s.late.fds, s.max.fds, `${s.perHour.fds}/h`], w));
    }
  }
  return lines.join("\n");
}
