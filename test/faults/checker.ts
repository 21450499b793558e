// The checker: judges a run's client history against etcd's own history of the same run, and reports,
// per property, how many violations it found and the first one. Nothing here trusts a client's view of
// what happened over etcd's: an answer is a claim that etcd's history confirms or refutes.
//
// How etcd's history is read (with layout.ts, the checker's own reading of the documented layout; nothing
// of the server's code, so that a layout bug in the server is not shared by its judge):
// the changes of one resource at one revision form a batch. A mutation writes its data keys and the
// resource's fence in one transaction, so a batch with a fence write is one or more mutations under
// one generation (the committer packs mutations under one token into one inner transaction). Each put
// value names the write that made it (`<write id>/<i>`, unique in a run), so puts say who wrote them;
// deletes and fence writes are explained by the writes that claim that revision (their answers) or,
// failing that, by an ambiguous write that could have made them.
import type { IKeyValue } from "etcd3";
import type { EtcdEvent, EtcdTruth } from "./etcd-history.js";
import { isWrite, principalOf, WITH_ANOTHER, type Op } from "./history.js";
import { decodeFence, decodeHolderValue, idempotencyHash, publishedValue, type Layout } from "./layout.js";
import { SpanIndex } from "./span-index.js";

export const PROPERTIES = {
  order: "per resource, generations of accepted writes never decrease in revision order",
  lost: "no acknowledged write is lost (in etcd at its revision; final state = last committed write per key)",
  refused: "a refused or failed write changed nothing (no revision carries it)",
  live: "under LIVE, no write committed once its generation's lease was gone",
  owners: "generations strictly increase per resource; one holder per resource at a revision",
  ambiguous: "an ambiguous answer is resolved by the history, and applied at most once",
  shared: "shared holders never beside an exclusive one; a semaphore never has more holders than its permits",
  lockdelay: "no grant while a lock-delay is in force",
  sessions: "a session closed leaves nothing held on it; a close is refused only once the session is gone",
  refusals: "every refusal is justified by a state etcd held between the call's invocation and its answer, by the run's policy, or by the token's holder binding",
  ttl: "no lease outlives the TTL its Acquire asked for (past its last renewal or etcd fault, with a margin)",
  renewals: "no lease is lost before its TTL: a renewal refused LEASE_NOT_FOUND comes a TTL after a renewal of its lease answered ok, unless it was released, closed or preempted, or etcd was faulted between",
  observe: "every state an Observe stream reported is etcd's at the revision it names (the exclusive holder's generation, lease and value, or nobody holding), and its revisions strictly increase along the stream",
  values: "a grant publishes the value its Acquire sent; a holder's value changes only by a Proclaim of the generation holding it, at the revision that Proclaim was answered with, and a refused Proclaim changes nothing",
  authz: "no call the run's policy denies, and no write, renewal or release under a token or lease another principal acquired, is accepted or applied",
  layout: "every key and value under the prefix is one the documented layout describes",
} as const;
export type Property = keyof typeof PROPERTIES;

export interface Violations {
  count: number;
  first?: string;
}

export interface CheckResult {
  violations: Record<Property, Violations>;
  /** Writes (a write and its retries count once) by what the history made of them. */
  writes: { acknowledged: number; refused: number; ambiguousCommitted: number; ambiguousNotCommitted: number };
  grants: number;
  events: number;
  /** Refusals judged against etcd's history (all of them justified when refusals is 0). */
  refusalsJudged: number;
  /** Refusals by policy (PERMISSION_DENIED), each judged against the run's policy. */
  policyRefusals: number;
  /** Refusals by holder binding (PERMISSION_DENIED, NOT_HOLDER): a token or lease another principal acquired. */
  bindingRefusals: number;
}

/** A span of time in which etcd may have renewed every lease to its full TTL (a leader change, a restart). */
export interface EtcdDisruption {
  start: number;
  end: number;
}

/**
 * How long past its TTL (from its last renewal or etcd fault) a lease may live: etcd's expiry is not
 * exact, and on a loaded machine etcd elects leaders on its own (missed heartbeats), each renewing every
 * lease once more, and revokes late (a run under a load of 20 saw a 2 s lease end 9.7 s after its last
 * renewal). The bound catches a lease granted several times longer than asked, not one a little longer.
 */
export const TTL_MARGIN = (ttlMs: number) => 3 * ttlMs + 10_000;

/** Clock granularity between processes for the renewals property (one machine, one clock). */
const RENEWAL_SLACK_MS = 200;

interface WriteGroup {
  id: string;
  resource: string;
  gen: bigint;
  lease: bigint;
  mode: "order" | "live";
  effects: [string, string | null][];
  attempts: Op[];
  status: "ok" | "fail" | "ambiguous";
  /** The revision an ok answer gave. */
  okRev?: bigint;
  /** The revision etcd's history shows it applied at. */
  appliedAt?: bigint;
}

interface Batch {
  rev: bigint;
  resource: string;
  owner: EtcdEvent[];
  fence?: bigint;
  data: { key: string; value: string | null }[];
}

interface ResourceState {
  /** value: what it publishes (an Acquire's value, then each Proclaim's). */
  owner?: { gen: bigint; lease: bigint; holder: string; value: string };
  lastGrant: bigint;
  fence: bigint;
  data: Map<string, string>;
  granted: Set<bigint>;
  /** Grants whose Acquire failed and may have been granted all the same (grantNobodyHolds): nobody has their token. */
  orphans: Set<bigint>;
}

interface Span {
  /** The first revision it was there at, and the first it was not (INF: still there at the end). */
  from: bigint;
  to: bigint;
  holder: string;
  what: string;
  /** A shared holder's: the semaphore's permits it names (0: no cap). */
  max?: number;
  /** A waiter's or shared holder's: its lease (or session), 16 hex digits. */
  lease?: string;
  /** An owner's: its generation and lease. */
  gen?: bigint;
  leaseId?: bigint;
}

/** What a resource's refusals are judged against: how its fence, issued key and holders stood, revision by revision. */
interface Timeline {
  /** Every fence write, in revision order, with the value it left. */
  fences: [bigint, bigint][];
  /** The revisions the issued key was written at (every grant's). */
  issued: bigint[];
  /** Everything that makes the resource busy for an Acquire: owners, lock-delays, waiters, shared holders. */
  busy: Span[];
  openBusy: Map<string, Span>;
  /** The lock-delays alone (also in busy). */
  delays: Span[];
  /** Preemptions' handing-over markers (also in busy); lease: the preemptor's, decimal. */
  handovers: Span[];
  /** The owner key's spans, by "generation|lease". */
  owners: Map<string, Span>;
  /** The value the owner key published from each revision it was put at (a grant, a Proclaim), in revision order. */
  values: [bigint, string][];
}

const INF = 1n << 62n;
/** A preemption's handing-over marker: the lock-delay key's value while it lasts (docs/preemption.md). */
const PREEMPTING = JSON.stringify({ seconds: 0, preempting: true });

/**
 * Whether a failed Acquire may have left a grant that nobody holds a token of: one whose lease ended
 * before the grant could be answered (LEASE_NOT_FOUND); one through the SDK, which may be granted on
 * a session it then takes for lost (its deadline passed while the Acquire was on its way), closes that
 * session and acquires again on a new one, and reports what that attempt got; and one resource of a
 * failed AcquireAll, granted and released before the call's answer.
 */
function grantNobodyHolds(acq: Op): boolean {
  return acq.reason === "LEASE_NOT_FOUND" || acq.via === "sdk" || acq.all !== undefined;
}

function isRecord(value: Buffer): boolean {
  try {
    const v = JSON.parse(value.toString()) as Record<string, unknown>;
    return typeof v.fingerprint === "string" && typeof v.fence === "string" && /^\d+$/.test(v.fence);
  } catch {
    return false;
  }
}

/**
 * The run's authorization policy, as the checker knows it: whether it denies this call (its client's
 * principal, the call's verb, its resource). A refusal by policy is right iff it does.
 */
export type PolicyDenies = (op: Op) => boolean;

/**
 * noSpace: the spans in which etcd was out of space (its NOSPACE alarm raised by the etcd-quota nemesis):
 * a refusal ETCD_NO_SPACE is right only in one.
 */
export function check(answered: Op[], truth: EtcdTruth, layout: Layout, resources: string[], disruptions: EtcdDisruption[] = [], denies: PolicyDenies = () => false, noSpace: EtcdDisruption[] = []): CheckResult {
  // ETCD_NO_SPACE is no verdict on what was written: etcd applies a write it takes while its database
  // crosses the quota, before it raises its alarm, and answers it NOSPACE all the same (docs/errors.md).
  // Such a write is judged as an ambiguous one, by etcd's history; its refusal, by when it came.
  const ops = answered.map((op) => (op.reason === "ETCD_NO_SPACE" && op.outcome === "fail" ? { ...op, outcome: "ambiguous" as const } : op));
  const violations = Object.fromEntries(Object.keys(PROPERTIES).map((p) => [p, { count: 0 }])) as Record<Property, Violations>;
  const violate = (p: Property, what: () => string) => {
    const v = violations[p];
    if (v.count++ === 0) v.first = what();
  };

  // --- the client history, as writes (with their retries) and acquisitions ---
  const groups = new Map<string, WriteGroup>();
  const byRecord = new Map<string, WriteGroup>(); // idempotency record hash -> its write
  for (const op of ops.filter(isWrite)) {
    let g = groups.get(op.write!);
    if (!g) {
      g = { id: op.write!, resource: op.resource, gen: BigInt(op.gen!), lease: BigInt(op.lease!), mode: op.mode!, effects: op.effects!, attempts: [], status: "fail" };
      groups.set(g.id, g);
      if (op.idem) byRecord.set(idempotencyHash(op.idem), g);
    }
    g.attempts.push(op);
    if (op.outcome === "ok") {
      const rev = BigInt(op.rev!);
      if (g.okRev !== undefined && g.okRev !== rev) violate("ambiguous", () => `write ${g!.id} answered ok at revisions ${g!.okRev} and ${rev} (attempt ${op.attempt})`);
      g.okRev ??= rev;
      g.status = "ok";
    } else if (op.outcome === "ambiguous" && g.status !== "ok") {
      g.status = "ambiguous";
    }
  }
  const okAt = new Map<string, WriteGroup[]>();
  const open = new Map<string, WriteGroup[]>(); // not ok, by resource and generation: what could explain a change
  for (const g of groups.values()) {
    if (g.status === "ok") push(okAt, `${g.resource}|${g.okRev}`, g);
    else push(open, `${g.resource}|${g.gen}`, g);
  }
  const acquires = ops.filter((o) => o.kind === "acquire");
  // By holder label and resource: a label is unique per Acquire, and an AcquireAll's names each of its resources.
  const acquireByHolder = new Map(acquires.map((o) => [`${o.holder!}|${o.resource}`, o]));
  const acquireOf = (holder: string, resource: string) => acquireByHolder.get(`${holder}|${resource}`);
  /** The holder labels of AcquireAll calls refused for one of their resources. */
  const refusedAll = new Set(acquires.filter((o) => o.all !== undefined && o.outcome === "fail" && o.reason !== WITH_ANOTHER).map((o) => o.holder!));
  /** Proclaims by the value they set (unique in a run), with the revision etcd's history shows it set at. */
  const proclaims = new Map(ops.filter((o) => o.kind === "proclaim" && o.value !== undefined).map((o) => [o.value!, { op: o, appliedAt: undefined as bigint | undefined }]));

  // --- etcd's history, in batches of one resource at one revision, read with layout.ts ---
  const known = new Set(resources);
  const grantOf = new Map<string, { gen: bigint; lease: bigint }>();
  const sessions = new Map<bigint, Span>();
  const batches = new Map<string, Batch>();
  // Revisions (with their resource) at which a preemption handed a resource over: its marker was put.
  const preemptAt = new Set<string>();
  /** Leases that a preemption's record (x/<lease>) names, with the revision it was put at. */
  const preemptedLeases = new Map<bigint, bigint>();
  const recordsAt = new Map<bigint, WriteGroup[]>(); // idempotency records put at a revision: their writes applied there
  const timelines = new Map<string, Timeline>(resources.map((r) => [r, { fences: [], issued: [], busy: [], openBusy: new Map(), owners: new Map(), delays: [], handovers: [], values: [] }]));
  let grants = 0;
  for (const e of truth.events) {
    const p = layout.parse(e.kv.key);
    const where = () => `revision ${e.rev}: ${e.type} ${JSON.stringify(e.kv.key.toString())}`;
    if (!p) {
      violate("layout", () => `${where()}: a key the layout does not describe`);
      continue;
    }
    if (p.scope === "idempotency") {
      if (e.type !== "put") continue;
      if (!isRecord(e.kv.value)) violate("layout", () => `${where()}: an idempotency record that is not {"fingerprint","fence"}: ${e.kv.value.toString().slice(0, 80)}`);
      const g = byRecord.get(p.hash);
      if (g) push(recordsAt, e.rev, g);
      continue;
    }
    if (p.scope === "other") {
      if (p.kind === "preempted") {
        // A preemption ends a holding and records it on the holder's lease: its renewals answer PREEMPTED.
        if (e.type === "put") preemptedLeases.set(BigInt(`0x${e.kv.key.toString().slice(-16)}`), e.rev);
        continue;
      }
      if (p.kind === "session") {
        // A session's key lives as long as the session: its lease is the session's id.
        const id = BigInt(`0x${e.kv.key.toString().slice(-16)}`);
        const span = sessions.get(id);
        if (e.type === "put" && !span) sessions.set(id, { from: e.rev, to: INF, holder: "", what: "session" });
        else if (e.type === "delete" && span && span.to === INF) span.to = e.rev;
      }
      continue; // signing keys, bindings: not in the workload's properties
    }
    if (!known.has(p.resource)) {
      violate("layout", () => `${where()}: a key of "${p.resource}", a resource nobody used`);
      continue;
    }
    const tl = timelines.get(p.resource)!;
    if (p.kind === "issued") {
      if (e.type === "put") tl.issued.push(e.rev);
      continue;
    }
    if (p.kind === "usage") {
      if (e.type === "put" && !/^\d+(?: [0-9a-f]{16})?$/.test(e.kv.value.toString())) violate("layout", () => `${where()}: a usage that is not decimal (and a payer's tag)`);
      continue;
    }
    if (p.kind === "owner-delay" || p.kind === "line" || p.kind === "shared-line" || p.kind === "shared") {
      // What makes a resource busy besides its owner: a lock-delay, a waiter in line, a shared holder.
      const id = e.kv.key.toString();
      if (e.type === "delete") {
        const b = tl.openBusy.get(id);
        if (b) b.to = e.rev;
        tl.openBusy.delete(id);
        continue;
      }
      if (tl.openBusy.has(id)) continue; // rewritten in place
      let holder = "";
      let maxHolders = 0;
      const handingOver = p.kind === "owner-delay" && e.kv.value.toString() === PREEMPTING;
      if (handingOver) {
        // A preemption's handing-over marker, on the preemptor's lease: busy for everyone else.
        preemptAt.add(`${e.rev}|${p.resource}`);
        holder = `lease ${e.kv.lease}`;
      } else if (p.kind === "owner-delay") {
        if (!/^\{"seconds":\d+\}$/.test(e.kv.value.toString())) violate("layout", () => `${where()}: a lock-delay that is not {"seconds": n}`);
      } else {
        const v = decodeHolderValue(e.kv.value, p.kind === "shared");
        if (!v) violate("layout", () => `${where()}: a holder value the layout does not describe: ${e.kv.value.toString().slice(0, 80)}`);
        holder = v?.holder ?? "";
        maxHolders = v?.maxHolders ?? 0;
      }
      if (p.kind === "shared") {
        // A shared grant: its key's create revision is its generation, as the owner key's is.
        grants++;
        grantOf.set(`${holder}|${p.resource}`, { gen: e.rev, lease: BigInt(e.kv.lease) });
        // Read in revision order, the lock-delays there before this revision are those still open.
        const delay = [...tl.openBusy.values()].find((b) => b.what === "owner-delay" && b.from < e.rev);
        if (delay) violate("lockdelay", () => `${where()}: a shared grant to ${holder} while the lock-delay put at revision ${delay.from} was in force`);
        const acq = acquireOf(holder, p.resource);
        if (!acq) violate("owners", () => `${where()}: a shared grant to "${holder}", which no Acquire of the history asked for`);
        else if (acq.outcome === "fail" && !grantNobodyHolds(acq)) violate("owners", () => `${where()}: a shared grant to ${holder}, whose Acquire was answered ${acq.code} ${acq.reason ?? ""}`);
      }
      const span = { from: e.rev, to: INF, holder, what: handingOver ? "preempting" : p.kind, max: maxHolders, lease: handingOver ? String(e.kv.lease) : p.rest };
      tl.busy.push(span);
      if (handingOver) tl.handovers.push(span);
      else if (p.kind === "owner-delay") tl.delays.push(span);
      tl.openBusy.set(id, span);
      continue;
    }
    const id = `${e.rev}|${p.resource}`;
    let b = batches.get(id);
    if (!b) batches.set(id, (b = { rev: e.rev, resource: p.resource, owner: [], data: [] }));
    if (p.kind === "owner") b.owner.push(e);
    else if (p.kind === "fence") {
      if (e.type === "delete") b.fence = -1n;
      else {
        const f = decodeFence(e.kv.value);
        if (f === undefined) violate("layout", () => `${where()}: a fence that is not 20 decimal digits: ${JSON.stringify(e.kv.value.toString())}`);
        b.fence = f ?? -1n;
      }
      tl.fences.push([e.rev, b.fence]);
    } else b.data.push({ key: p.rest!, value: e.type === "put" ? e.kv.value.toString() : null });
  }

  /** A holder's value changed to value at rev: the Proclaim that sent it must have held the resource then. */
  const proclaimed = (value: string, rev: bigint, owner: { gen: bigint; lease: bigint; holder: string }, where: string) => {
    const p = proclaims.get(value);
    if (!p) return violate("values", () => `${where}: ${owner.holder}'s value changed to ${JSON.stringify(value.slice(0, 80))}, which no Proclaim of the history sent`);
    if (p.appliedAt !== undefined) return violate("ambiguous", () => `${where}: Proclaim ${value} set at revision ${p.appliedAt} and again here`);
    p.appliedAt = rev;
    const { op } = p;
    if (op.outcome === "fail") violate("values", () => `${where}: ${op.client} proclaim #${op.seq} was answered ${op.reason ?? op.code} and yet set ${value}`);
    if (BigInt(op.gen!) !== owner.gen || BigInt(op.lease!) !== owner.lease) {
      violate("values", () => `${where}: ${op.client} proclaim #${op.seq} under generation ${op.gen} (lease ${op.lease}) set the value of generation ${owner.gen} (lease ${owner.lease})`);
    }
  };

  // Every lock-delay is known now, with its end.
  const delayIndex = new Map([...timelines].map(([r, tl]) => [r, new SpanIndex(tl.delays)]));
  const states = new Map<string, ResourceState>(resources.map((r) => [r, { lastGrant: 0n, fence: 0n, data: new Map(), granted: new Set(), orphans: new Set() }]));
  for (const b of batches.values()) {
    const s = states.get(b.resource)!;
    const where = `revision ${b.rev} of "${b.resource}"`;
    // Which writes made this batch.
    const here = new Set<WriteGroup>(okAt.get(`${b.resource}|${b.rev}`) ?? []);
    // A write with an idempotency key put its record in its own transaction: that says it was applied
    // here, even when it changed no data (a delete of an absent key).
    for (const g of recordsAt.get(b.rev) ?? []) if (g.resource === b.resource) here.add(g);
    for (const d of b.data) {
      if (d.value === null) continue;
      const id = d.value.slice(0, d.value.lastIndexOf("/"));
      const g = groups.get(id);
      if (!g || g.resource !== b.resource) {
        violate("refused", () => `${where}: put ${d.key}=${d.value}, which no write of the history sent`);
        continue;
      }
      here.add(g);
    }
    const explain = (fits: (g: WriteGroup) => boolean, what: string) => {
      const candidates = (open.get(`${b.resource}|${b.fence}`) ?? []).filter((g) => g.appliedAt === undefined && fits(g));
      const found = candidates.find((g) => g.status === "ambiguous") ?? candidates[0];
      if (found) here.add(found);
      else violate("refused", () => `${where}: ${what}, which no write of generation ${b.fence} explains`);
    };
    for (const d of b.data) {
      if (d.value === null && ![...here].some((g) => g.effects.some(([k, v]) => k === d.key && v === null))) {
        explain((g) => g.effects.some(([k, v]) => k === d.key && v === null), `delete of ${d.key}`);
      }
    }
    // The first grant of a resource creates its fence at 0 (no write has been accepted yet).
    const fenceCreated = b.fence === 0n && s.fence === 0n && b.data.length === 0;
    // A preemption raises the fence past every generation issued, with no data, and later brings it to
    // the preemptor's generation exactly.
    const preemptionFence = preemptAt.has(`${b.rev}|${b.resource}`) || (s.owner !== undefined && b.fence === s.owner.gen && acquireOf(s.owner.holder, b.resource)?.preempt === true);
    if (b.fence !== undefined && here.size === 0 && !fenceCreated && !preemptionFence) {
      explain((g) => g.effects.every(([k, v]) => v === null && !s.data.has(k)), `a fence write (${b.fence}) without data changes`);
    }
    if (b.data.length > 0 && b.fence === undefined) violate("refused", () => `${where}: data changed without a fence write`);

    for (const g of here) {
      if (g.appliedAt !== undefined && g.appliedAt !== b.rev) {
        violate("ambiguous", () => `write ${g.id} applied at revision ${g.appliedAt} and again at ${b.rev}`);
        continue;
      }
      g.appliedAt = b.rev;
      if (g.status === "fail") violate("refused", () => `${where}: write ${g.id} was answered ${g.attempts.map((a) => a.reason ?? a.code).join(", ")} and yet applied`);
      if (b.fence !== g.gen) violate("order", () => `${where}: write ${g.id} of generation ${g.gen} committed with the fence set to ${b.fence}`);
      if (s.fence > g.gen) violate("order", () => `${where}: write ${g.id} of generation ${g.gen} accepted after the fence reached ${s.fence}`);
      if (s.orphans.has(g.gen)) violate("owners", () => `${where}: write ${g.id} under generation ${g.gen}, whose Acquire was refused`);
      if (!s.granted.has(g.gen)) violate("order", () => `${where}: write ${g.id} of generation ${g.gen}, which was never granted before it`);
      if (g.mode === "live" && (s.owner?.gen !== g.gen || s.owner.lease !== g.lease)) {
        violate("live", () => `${where}: LIVE write ${g.id} of generation ${g.gen} (lease ${g.lease}) committed while the owner was ${s.owner ? `generation ${s.owner.gen} (lease ${s.owner.lease})` : "nobody"}`);
      }
      for (const [k, v] of g.effects) {
        const change = b.data.find((d) => d.key === k);
        const applied = v === null ? (change ? change.value === null : !s.data.has(k)) : change?.value === v;
        if (!applied) violate("lost", () => `${where}: write ${g.id} committed here without its ${v === null ? "delete" : "put"} of ${k}`);
      }
    }
    if (b.fence !== undefined && b.fence < s.fence) violate("order", () => `${where}: the fence went down from ${s.fence} to ${b.fence}`);

    // Apply the batch.
    const tl = timelines.get(b.resource)!;
    const endOwner = () => {
      if (s.owner) {
        const span = tl.owners.get(`${s.owner.gen}|${s.owner.lease}`);
        if (span && span.to === INF) span.to = b.rev;
      }
    };
    for (const e of b.owner) {
      if (e.type === "delete") {
        endOwner();
        s.owner = undefined;
        continue;
      }
      const o = decodeHolderValue(e.kv.value, true);
      if (!o) violate("layout", () => `${where}: an owner value the layout does not describe: ${e.kv.value.toString().slice(0, 80)}`);
      const holder = o?.holder ?? "";
      const gen = BigInt(e.kv.create_revision);
      const lease = BigInt(e.kv.lease);
      const value = publishedValue(e.kv.value);
      tl.values.push([b.rev, value]);
      if (gen !== e.rev) {
        if (s.owner && s.owner.lease === lease && s.owner.holder === holder) {
          // The holder's key rewritten in place: only a Proclaim of the generation holding it changes its value.
          if (value !== s.owner.value) proclaimed(value, b.rev, s.owner, where);
          s.owner.value = value;
        } else {
          violate("owners", () => `${where}: the owner key was overwritten by ${holder} (lease ${lease}) while held by ${s.owner?.holder} (lease ${s.owner?.lease})`);
          // From here on, LIVE writes are judged against the owner the key now names.
          endOwner();
          s.owner = { gen, lease, holder, value };
          tl.owners.set(`${gen}|${lease}`, { from: b.rev, to: INF, holder, what: "owner", gen, leaseId: lease });
          tl.busy.push(tl.owners.get(`${gen}|${lease}`)!);
        }
        continue;
      }
      grants++;
      if (s.owner) violate("owners", () => `${where}: ${holder} granted while ${s.owner!.holder} held it`);
      const delay = delayIndex.get(b.resource)!.find(b.rev, b.rev - 1n);
      if (delay) violate("lockdelay", () => `${where}: ${holder} granted while the lock-delay put at revision ${delay.from} was in force (until ${delay.to === INF ? "the end" : delay.to})`);
      const handover = tl.handovers.find((d) => d.from < b.rev && d.to > b.rev && d.lease !== String(lease));
      if (handover) violate("owners", () => `${where}: ${holder} granted while a preemption by ${handover.holder} was handing the resource over (since revision ${handover.from})`);
      if (gen <= s.lastGrant) violate("owners", () => `${where}: generation ${gen} granted after generation ${s.lastGrant}`);
      const acq = acquireOf(holder, b.resource);
      if (acq && (acq.value ?? "") !== value) violate("values", () => `${where}: ${holder} granted publishing ${JSON.stringify(value.slice(0, 80))}, and its Acquire sent ${JSON.stringify(acq.value ?? "")}`);
      if (!acq) violate("owners", () => `${where}: a grant to "${holder}", which no Acquire of the history asked for`);
      else if (acq.outcome === "fail" || acq.outcome === "unsent") {
        // An Acquire whose grant nobody got a token of (grantNobodyHolds) leaves it in etcd: it must end
        // (with its lease, or given back), and nothing may be written under it. Any other refusal must
        // not have granted anything.
        if (grantNobodyHolds(acq)) s.orphans.add(gen);
        else violate("owners", () => `${where}: a grant to ${holder}, whose Acquire was answered ${acq.code} ${acq.reason ?? ""}`);
      }
      endOwner();
      s.owner = { gen, lease, holder, value };
      s.lastGrant = gen;
      s.granted.add(gen);
      grantOf.set(`${holder}|${b.resource}`, s.owner);
      const span = { from: b.rev, to: INF, holder, what: "owner", gen, leaseId: lease };
      tl.owners.set(`${gen}|${lease}`, span);
      tl.busy.push(span);
    }
    if (b.fence !== undefined) s.fence = b.fence;
    for (const d of b.data) {
      if (d.value === null) s.data.delete(d.key);
      else s.data.set(d.key, d.value);
    }
  }

  for (const { op, appliedAt } of proclaims.values()) {
    if (op.outcome === "ok" && appliedAt !== BigInt(op.rev ?? -1)) {
      violate("values", () => `${op.client} proclaim #${op.seq} of ${op.value} on "${op.resource}" was answered ok at revision ${op.rev}, and ${appliedAt === undefined ? "etcd's history never shows its value" : `etcd's history shows it set at ${appliedAt}`}`);
    }
  }
  for (const [r, s] of states) {
    if (s.owner && s.orphans.has(s.owner.gen)) violate("owners", () => `"${r}": the grant of generation ${s.owner!.gen}, whose Acquire was refused, still owns it at the end`);
  }

  // Every span is known now, with its end: indexed for the judgements below.
  const index = new Map(
    [...timelines].map(([r, tl]) => {
      const byLease = new Map<string, Span[]>(); // owner spans by lease (a session's id), decimal
      for (const [k, o] of tl.owners) push(byLease, k.slice(k.indexOf("|") + 1), o);
      return [r, { busy: new SpanIndex(tl.busy), owners: new SpanIndex(tl.owners.values()), ownersByLease: byLease }];
    }),
  );

  // --- what followers were told (Observe), against etcd's history at the revision each message names ---
  const lastOnStream = new Map<string, bigint>();
  for (const op of ops) {
    if (op.kind !== "observe" || op.rev === undefined) continue;
    const rev = BigInt(op.rev);
    const where = `${op.client} observe #${op.seq} (stream ${op.stream}) of "${op.resource}" at revision ${rev}`;
    const before = lastOnStream.get(op.stream!);
    if (before !== undefined && rev <= before) violate("observe", () => `${where}: came after a message of revision ${before} on its stream`);
    lastOnStream.set(op.stream!, rev);
    const ix = index.get(op.resource);
    const tl = timelines.get(op.resource);
    if (!ix || !tl) continue;
    const owner = ix.owners.find(rev, rev);
    if (op.gen !== undefined) {
      const i = lastIndex(tl.values, ([r]) => r <= rev);
      const value = i >= 0 ? tl.values[i][1] : "";
      if (!owner) violate("observe", () => `${where}: named generation ${op.gen} (lease ${op.lease}) the holder, and nobody held it exclusively then`);
      else if (String(owner.gen) !== op.gen || String(owner.leaseId) !== op.lease) violate("observe", () => `${where}: named generation ${op.gen} (lease ${op.lease}) the holder, and generation ${owner.gen} (lease ${owner.leaseId}) held it`);
      else if (value !== op.value) violate("observe", () => `${where}: named ${JSON.stringify(op.value)} its holder's value, and etcd's owner key published ${JSON.stringify(value)}`);
    } else if (op.held === false && owner) violate("observe", () => `${where}: said nobody held it, and generation ${owner.gen} did`);
  }

  // --- shared holders: never beside an exclusive one, never more than a semaphore's permits ---
  for (const [r, tl] of timelines) {
    const shared = tl.busy.filter((b) => b.what === "shared").sort((a, b) => cmp(a.from, b.from));
    for (const sh of shared) {
      const o = index.get(r)!.owners.find(sh.from, sh.to - 1n);
      if (o) violate("shared", () => `"${r}": shared holder ${sh.holder} (revisions ${sh.from} to ${sh.to === INF ? "the end" : sh.to}) beside exclusive holder ${o.holder} (${o.from} to ${o.to === INF ? "the end" : o.to})`);
    }
    // In the order they began: those still there when each began (a span gone stays gone, as at only grows).
    let holding: Span[] = [];
    for (let i = 0; i < shared.length; i++) {
      const at = shared[i].from;
      holding = [...holding, shared[i]].filter((x) => x.to > at);
      const cap = Math.min(...holding.map((x) => x.max || Infinity));
      if (holding.length > cap) violate("shared", () => `"${r}": ${holding.length} semaphore holders at revision ${at} (${holding.map((x) => x.holder).join(", ")}), with ${cap} permits`);
    }
  }

  // --- what the answers claimed, against what etcd kept ---
  const writes = { acknowledged: 0, refused: 0, ambiguousCommitted: 0, ambiguousNotCommitted: 0 };
  for (const g of groups.values()) {
    if (g.status === "ok") {
      writes.acknowledged++;
      if (g.appliedAt === undefined) violate("lost", () => `write ${g.id} was acknowledged at revision ${g.okRev} of "${g.resource}" and is not in etcd's history`);
      else if (g.appliedAt !== g.okRev) violate("lost", () => `write ${g.id} was acknowledged at revision ${g.okRev} and applied at ${g.appliedAt}`);
    } else if (g.status === "ambiguous") {
      if (g.appliedAt !== undefined) writes.ambiguousCommitted++;
      else writes.ambiguousNotCommitted++;
    } else writes.refused++;
  }
  // In revision order, the acknowledged writes of a resource never go back a generation.
  for (const r of resources) {
    const acked = [...groups.values()].filter((g) => g.resource === r && g.status === "ok").sort((a, b) => cmp(a.okRev!, b.okRev!));
    for (let i = 1; i < acked.length; i++) {
      if (acked[i].gen < acked[i - 1].gen) violate("order", () => `"${r}": write ${acked[i].id} of generation ${acked[i].gen} acknowledged at revision ${acked[i].okRev}, after ${acked[i - 1].id} of generation ${acked[i - 1].gen} at ${acked[i - 1].okRev}`);
    }
  }
  // Every granted acquisition is in etcd as granted; grants follow real time.
  for (const r of resources) {
    const granted = acquires.filter((a) => a.resource === r && a.outcome === "ok");
    const gens = new Set<string>();
    for (const a of granted) {
      const grant = grantOf.get(`${a.holder!}|${r}`);
      if (!grant || String(grant.gen) !== a.gen || String(grant.lease) !== a.lease) {
        violate("owners", () => `"${r}": ${a.holder} was granted generation ${a.gen} (lease ${a.lease}), which etcd's history does not show`);
      }
      if (gens.has(a.gen!)) violate("owners", () => `"${r}": generation ${a.gen} granted to two acquisitions`);
      gens.add(a.gen!);
    }
    // An acquisition answered before another was invoked has the smaller generation.
    const byAnswer = [...granted].sort((a, b) => a.t1 - b.t1);
    const maxBefore: bigint[] = [];
    byAnswer.forEach((a, i) => maxBefore.push(i === 0 ? BigInt(a.gen!) : max(maxBefore[i - 1], BigInt(a.gen!))));
    for (const b of granted) {
      const i = lastBefore(byAnswer, b.t0);
      if (i >= 0 && maxBefore[i] >= BigInt(b.gen!)) violate("owners", () => `"${r}": ${b.holder} was granted generation ${b.gen}, invoked after a grant of generation ${maxBefore[i]} was answered`);
    }
  }
  // A lease reported gone (its Release answered, or a Renew answered NOT_FOUND) takes no LIVE write
  // invoked after that answer: etcd is linearizable, so such a write commits after the loss.
  const goneAt = new Map<string, number>();
  for (const op of ops) {
    if ((op.kind === "release" && op.outcome === "ok") || (op.kind === "renew" && op.reason === "LEASE_NOT_FOUND")) {
      const id = `${op.resource}|${op.gen}|${op.lease}`;
      goneAt.set(id, Math.min(goneAt.get(id) ?? Infinity, op.t1));
    }
  }
  for (const op of ops) {
    if (!isWrite(op) || op.mode !== "live" || op.outcome !== "ok" || op.replayed) continue;
    const gone = goneAt.get(`${op.resource}|${op.gen}|${op.lease}`);
    if (gone !== undefined && op.t0 > gone) violate("live", () => `"${op.resource}": LIVE write ${op.write} of generation ${op.gen} accepted at revision ${op.rev}, invoked ${op.t0 - gone} ms after its lease was reported gone`);
  }
  // --- refusals, against etcd's history ---
  // The revisions a call could have seen: at least the greatest revision answered before it was invoked,
  // at most one below the least revision committed by a call invoked after it was answered (etcd is
  // linearizable; a replayed answer's revision may be older than its call, so it bounds nothing above).
  const points = ops
    .filter((o) => o.outcome === "ok" && (((isWrite(o) || o.kind === "proclaim") && o.rev !== undefined) || (o.kind === "acquire" && o.gen !== undefined)))
    .map((o) => ({ t0: o.t0, t1: o.t1, rev: BigInt(o.kind === "acquire" ? o.gen! : o.rev!), replayed: Boolean(o.replayed) }));
  const byT1 = [...points].sort((a, b) => a.t1 - b.t1);
  const maxRevByT1: bigint[] = [];
  byT1.forEach((p, i) => maxRevByT1.push(i === 0 ? p.rev : max(maxRevByT1[i - 1], p.rev)));
  const byT0 = points.filter((p) => !p.replayed).sort((a, b) => a.t0 - b.t0);
  const minRevByT0: bigint[] = new Array(byT0.length);
  for (let i = byT0.length - 1; i >= 0; i--) minRevByT0[i] = i === byT0.length - 1 ? byT0[i].rev : min(minRevByT0[i + 1], byT0[i].rev);
  const windowOf = (op: Op): [bigint, bigint] => {
    const i = lastIndex(byT1, (p) => p.t1 < op.t0);
    const j = lastIndex(byT0, (p) => p.t0 <= op.t1) + 1;
    return [i >= 0 ? maxRevByT1[i] : 0n, j < byT0.length ? minRevByT0[j] - 1n : truth.revision];
  };
  const fenceAt = (tl: Timeline, rev: bigint) => {
    const i = lastIndex(tl.fences, ([r]) => r <= rev);
    return i >= 0 ? tl.fences[i][1] : 0n;
  };
  const issuedAt = (tl: Timeline, rev: bigint) => {
    const i = lastIndex(tl.issued, (r) => r <= rev);
    return i >= 0 ? tl.issued[i] : 0n;
  };
  const ownerSpan = (op: Op) => timelines.get(op.resource)?.owners.get(`${op.gen}|${op.lease}`);
  let refusalsJudged = 0;
  let policyRefusals = 0;
  let bindingRefusals = 0;
  /** The principal each granted token was acquired by, by "resource|generation|lease". */
  const acquiredBy = new Map(acquires.filter((a) => a.outcome === "ok").map((a) => [`${a.resource}|${a.gen}|${a.lease}`, principalOf(a)]));
  for (const op of ops) {
    if (op.kind === "close-session" && (op.outcome === "ok" || op.outcome === "fail")) {
      const id = BigInt(op.session!);
      const [, hi] = windowOf(op);
      const span = sessions.get(id);
      if (op.outcome === "ok") {
        if (span && span.to > hi) violate("sessions", () => `${op.client} close-session #${op.seq} of session ${id} was answered ok, and the session's key was still there at revision ${hi}`);
        for (const ix of index.values()) {
          for (const o of ix.ownersByLease.get(String(id)) ?? []) {
            if (o.to > hi) violate("sessions", () => `${op.client} close-session #${op.seq} of session ${id} was answered ok, and ${o.holder}'s owner key on it was still there at revision ${hi}`);
          }
        }
      } else {
        refusalsJudged++;
        if (op.reason !== "LEASE_NOT_FOUND") violate("refusals", () => `${op.client} close-session #${op.seq} answered ${op.code} ${op.reason ?? ""}: a refusal no state of etcd's history explains`);
        else if (span && span.to > hi) violate("sessions", () => `${op.client} close-session #${op.seq} of session ${id} was answered NOT_FOUND, and the session's key was there until revision ${span.to === INF ? "the end" : span.to}, past ${hi}`);
      }
      continue;
    }
    if (op.reason === "ETCD_NO_SPACE") {
      refusalsJudged++;
      if (!noSpace.some((d) => op.t0 <= d.end && op.t1 >= d.start)) {
        violate("refusals", () => `${op.client} ${op.kind} #${op.seq} on "${op.resource}" answered ${op.code} ETCD_NO_SPACE: etcd was never out of space during the call (no etcd-quota fault ran then)`);
      }
      continue;
    }
    if (op.outcome !== "fail" && !(op.kind === "release" && op.outcome === "ok")) continue;
    const tl = timelines.get(op.resource);
    if (!tl) continue;
    const [lo, hi] = windowOf(op);
    const during = `between revisions ${lo} and ${hi}`;
    const wrong = (why: string) => violate("refusals", () => `${op.client} ${op.kind} #${op.seq} on "${op.resource}" answered ${op.code} ${op.reason ?? ""}: ${why}`);
    if (op.outcome === "ok") {
      // A Release answered ok: the grant is gone by its answer.
      const span = ownerSpan(op);
      if (span && span.to > hi) violate("owners", () => `${op.client} release #${op.seq} of generation ${op.gen} on "${op.resource}" was answered ok, and its owner key was still there at revision ${hi} (${span.to === INF ? "and at the end" : `until ${span.to}`})`);
      continue;
    }
    refusalsJudged++;
    if (op.reason === "NOT_HOLDER") {
      // What it left written is judged with every refused write (property refused).
      bindingRefusals++;
      const by = acquiredBy.get(`${op.resource}|${op.gen}|${op.lease}`);
      if (by === undefined) wrong("no acquisition of the history was granted this token, so nobody else holds it");
      else if (by === principalOf(op)) wrong(`the token was acquired by ${by}, the caller itself`);
    } else if (op.reason === "PERMISSION_DENIED") {
      // What it left written is judged with every refused write (property refused).
      policyRefusals++;
      if (!denies(op)) wrong("the run's policy grants this call");
    } else if (op.reason === "PREEMPTION_RATE_EXCEEDED" || op.reason === "HISTORY_RATE_EXCEEDED") {
      // Rates a replica keeps in its own memory (docs/budgets.md), not in etcd: no state of etcd's history
      // decides them. What can be judged: only a preemption is refused for the preemption rate.
      if (op.reason === "PREEMPTION_RATE_EXCEEDED" && !(op.kind === "acquire" && op.preempt)) wrong("only a preemption is refused for the preemption rate");
    } else if (op.kind === "proclaim") {
      // Refused as a stale write is (server/lease/proclaim.ts), but an exclusive generation is stale as
      // soon as a newer one is issued, written or not.
      const gen = BigInt(op.gen!);
      if (op.reason === "STALE_TOKEN") {
        if (fenceAt(tl, hi) <= gen && issuedAt(tl, hi) <= gen) wrong(`the fence was at most ${fenceAt(tl, hi)} and the last generation issued ${issuedAt(tl, hi)} ${during}, neither above generation ${gen}`);
      } else if (op.reason === "LEASE_NOT_HELD") {
        const span = ownerSpan(op);
        if (span && span.from <= lo && span.to > hi) wrong(`generation ${gen} (lease ${op.lease}) owned the resource ${during}`);
      } else if (op.reason === "GENERATION_NOT_ISSUED") {
        if (issuedAt(tl, lo) >= gen) wrong(`generation ${gen} was issued by revision ${lo}`);
      } else wrong("a refusal no state of etcd's history explains");
    } else if (isWrite(op)) {
      const gen = BigInt(op.gen!);
      if (op.reason === "STALE_TOKEN") {
        // The fence only goes up: some state of the window had it above the token iff the last one did.
        if (fenceAt(tl, hi) <= gen) wrong(`the fence was at most ${fenceAt(tl, hi)} ${during}, not above generation ${gen}`);
      } else if (op.reason === "LEASE_NOT_HELD") {
        const span = ownerSpan(op);
        if (op.mode !== "live") wrong("an ORDER write is never refused for its lease");
        else if (span && span.from <= lo && span.to > hi) wrong(`generation ${gen} (lease ${op.lease}) owned the resource ${during}`);
      } else if (op.reason === "GENERATION_NOT_ISSUED") {
        if (issuedAt(tl, lo) >= gen) wrong(`generation ${gen} was issued by revision ${lo}`);
      } else wrong("a refusal no state of etcd's history explains");
    } else if (op.kind === "acquire") {
      if (op.reason === "RESOURCE_HELD") {
        const busy = index.get(op.resource)!.busy.find(lo, hi, (b) => b.holder !== op.holder);
        if (!busy) wrong(`nobody held, waited for or delayed the resource ${during}`);
      } else if (op.reason === "ALREADY_ACQUIRED") {
        // On a session that holds the resource already (an acquisition on it never released).
        // On a session that holds or waits for the resource already (an acquisition on it never released,
        // or a waiter's place left by a call cut off).
        const hex = op.session !== undefined ? BigInt(op.session).toString(16).padStart(16, "0") : undefined;
        const held =
          (index.get(op.resource)!.ownersByLease.get(op.session ?? "") ?? []).some((o) => o.from <= hi && o.to > lo) ||
          (hex !== undefined && index.get(op.resource)!.busy.find(lo, hi, (b) => b.lease === hex) !== undefined);
        if (!held) wrong(`its session ${op.session ?? "(none)"} neither held nor waited for the resource ${during}`);
      } else if (op.preempt && op.code === "FailedPrecondition" && op.reason === undefined) {
        // A holder that asked for a lock-delay cannot be preempted (docs/preemption.md).
        // A holder that asked for one, or the lock-delay of one whose lease expired.
        const delayed = index.get(op.resource)!.owners.find(lo, hi, (o) => (acquireOf(o.holder, op.resource)?.lockDelayMs ?? 0) > 0) !== undefined || delayIndex.get(op.resource)!.find(lo, hi) !== undefined;
        if (!delayed) wrong(`a preemption refused, and neither a holder that asked for a lock-delay nor a lock-delay was there ${during}`);
      } else if (op.reason === "LOCK_DELAY") {
        if (!delayIndex.get(op.resource)!.find(lo, hi)) wrong(`no lock-delay was in force ${during}`);
      } else if (op.reason === WITH_ANOTHER) {
        // Given back because another resource of its AcquireAll was refused: that refusal is judged on its own line.
        if (!refusedAll.has(op.holder ?? "")) wrong("given back for another resource of its AcquireAll, none of which was refused");
      } else if (op.reason !== "LEASE_NOT_FOUND") wrong("a refusal no state of etcd's history explains"); // LEASE_NOT_FOUND: judged with the grants above
    } else if (op.kind === "renew" && op.reason === "PREEMPTED") {
      const span = ownerSpan(op);
      const recorded = preemptedLeases.get(BigInt(op.lease ?? -1));
      // The preemption's record on the lease tells it: a shared holder has no owner key, and a session's
      // lease is preempted whole when one acquisition on it is (its renewals for another resource's
      // token on that session answer PREEMPTED too).
      if (recorded !== undefined && recorded <= hi) continue;
      if (!span) wrong("no grant of this generation and lease, and no preemption's record of its lease, is in etcd's history");
      else if (span.to > hi) wrong(`its owner key (generation ${op.gen}, lease ${op.lease}) was still there at revision ${hi}`);
      else if (!tl.handovers.some((d) => d.from === span.to)) wrong(`its owner key went at revision ${span.to}, and no preemption put its marker there`);
    } else if (op.kind === "release" || op.kind === "renew") {
      if (op.reason === "LEASE_NOT_FOUND" || op.code === "NotFound") {
        const span = ownerSpan(op);
        if (span && span.to > hi) wrong(`its owner key (generation ${op.gen}, lease ${op.lease}) was still there at revision ${hi}, so its lease was`);
      } else wrong("a refusal no state of etcd's history explains");
    }
  }

  // --- what the policy or the holder binding forbids is never done ---
  // A forbidden call answered ok, or a forbidden write that etcd's history shows applied (whatever its
  // answer): the refusals above are judged right, here their absence is judged wrong.
  const appliedAt = (op: Op) => (isWrite(op) ? groups.get(op.write!)?.appliedAt : op.kind === "proclaim" ? proclaims.get(op.value!)?.appliedAt : undefined);
  const judgedAuthz = new Set<string>();
  for (const op of ops) {
    if (!(isWrite(op) || op.kind === "renew" || op.kind === "release" || op.kind === "proclaim") || op.gen === undefined) continue;
    const by = acquiredBy.get(`${op.resource}|${op.gen}|${op.lease}`);
    const foreign = by !== undefined && by !== principalOf(op);
    const denied = denies(op);
    if (!foreign && !denied) continue;
    const why = foreign ? `under a token ${by} acquired, by ${principalOf(op)}` : `which the run's policy denies ${principalOf(op)}`;
    if (op.outcome === "ok") violate("authz", () => `${op.client} ${op.kind} #${op.seq} on "${op.resource}" ${why}, answered ok${op.rev ? ` at revision ${op.rev}` : ""}`);
    else if (appliedAt(op) !== undefined && !judgedAuthz.has(op.write ?? op.value!)) {
      judgedAuthz.add(op.write ?? op.value!);
      violate("authz", () => `${op.client} ${op.kind} ${op.write ?? op.value} on "${op.resource}" ${why}, answered ${op.reason ?? op.code} and applied at revision ${appliedAt(op)}`);
    }
  }

  // --- no lease ends before its TTL ---
  // A renewal answered ok at some point of its call (t0 to t1) keeps its lease for a TTL from then; a
  // renewal answered LEASE_NOT_FOUND found the lease gone at some point before its answer. Whatever the
  // order in which etcd saw the two, the lease was gone no earlier than the first's invocation plus its
  // TTL, unless something ended it on purpose: a Release, a CloseSession (invoked before the answer),
  // or a preemption. etcd grants at least the TTL asked for, and its expiry is never early.
  const ttlOf = new Map<string, number>();
  for (const o of ops) {
    if (o.outcome !== "ok" || o.lease === undefined || o.ttlMs === undefined) continue;
    if ((o.kind === "acquire" && o.session === undefined) || o.kind === "open-session") ttlOf.set(o.lease, o.ttlMs);
  }
  const keptAt = new Map<string, number>(); // the latest invocation of an ok grant or renewal, per lease
  const endedAt = new Map<string, number>(); // the earliest invocation of a release or close, per lease
  for (const o of ops) {
    if (o.lease === undefined) continue;
    if (o.outcome === "ok" && (o.kind === "renew" || (o.kind === "acquire" && o.session === undefined) || o.kind === "open-session")) keptAt.set(o.lease, Math.max(keptAt.get(o.lease) ?? 0, o.t0));
    if (o.kind === "release" || o.kind === "close-session") endedAt.set(o.lease, Math.min(endedAt.get(o.lease) ?? Infinity, o.t0));
  }
  for (const r of ops) {
    if (r.kind !== "renew" || r.reason !== "LEASE_NOT_FOUND") continue;
    const ttl = ttlOf.get(r.lease!);
    const kept = keptAt.get(r.lease!);
    if (ttl === undefined || kept === undefined) continue;
    if ((endedAt.get(r.lease!) ?? Infinity) < r.t1 || preemptedLeases.has(BigInt(r.lease!))) continue;
    // An etcd fault between the two is etcd's own doing: a leader cut off may renew a lease on its side
    // (etcd renews at the leader, outside consensus) that the new leader then lets expire.
    if (disruptions.some((d) => d.start <= r.t1 && d.end >= kept)) continue;
    if (r.t1 + RENEWAL_SLACK_MS < kept + ttl) violate("renewals", () => `${r.client} renew #${r.seq} of lease ${r.lease} ("${r.resource}", TTL ${ttl} ms) answered LEASE_NOT_FOUND ${kept + ttl - r.t1} ms before its TTL ran out from a renewal invoked at ${kept}`);
  }

  // --- every lease ends within its TTL of its last renewal ---
  // A lease's owner key goes when the lease does. Its end happened no earlier than the invocation of any
  // call that committed at or before it; the lease was last kept alive at its grant's answer, a renewal's
  // answer, or the end of an etcd disruption (which renews every lease to its full TTL). Only plain-gRPC
  // acquisitions are judged: the SDK keeps its leases alive on its own until it releases them.
  const byRev = points.filter((p) => !p.replayed).sort((a, b) => cmp(a.rev, b.rev));
  const maxT0ByRev: number[] = [];
  byRev.forEach((p, i) => maxT0ByRev.push(Math.max(i === 0 ? 0 : maxT0ByRev[i - 1], p.t0)));
  const lastT = ops.reduce((a, o) => Math.max(a, o.t0), 0);
  const renewals = new Map<string, number>();
  for (const op of ops) if (op.kind === "renew") renewals.set(op.lease!, Math.max(renewals.get(op.lease!) ?? 0, op.t1));
  const disruptionsInOrder = [...disruptions].sort((x, y) => x.start - y.start);
  for (const a of acquires) {
    const ttl = a.ttlMs;
    if (a.via !== "grpc" || a.outcome !== "ok" || ttl === undefined) continue;
    const span = ownerSpan(a);
    if (!span) continue;
    let kept = Math.max(a.t1, renewals.get(a.lease!) ?? 0);
    for (const d of disruptionsInOrder) if (d.start <= kept + ttl + TTL_MARGIN(ttl)) kept = Math.max(kept, d.end);
    const i = lastIndex(byRev, (p) => p.rev <= span.to);
    const endedNoEarlierThan = span.to === INF ? lastT : i >= 0 ? maxT0ByRev[i] : 0;
    const overdue = endedNoEarlierThan - (kept + ttl);
    if (overdue > TTL_MARGIN(ttl)) violate("ttl", () => `"${a.resource}": ${a.holder}'s lease ${a.lease} (TTL ${ttl} ms) outlived its last renewal or etcd fault by at least ${overdue + ttl} ms`);
  }

  // The final contents: each key as its last committed write left it, and as the history replays it.
  const finalByResource = new Map<string, Map<string, IKeyValue>>(resources.map((r) => [r, new Map()]));
  for (const kv of truth.final) {
    const p = layout.parse(kv.key);
    if (p?.scope === "resource" && p.kind === "data") finalByResource.get(p.resource)?.set(p.rest!, kv);
  }
  const last = new Map<string, { rev: bigint; value: string | null; id: string }>();
  for (const g of groups.values()) {
    if (g.appliedAt === undefined) continue;
    for (const [k, v] of g.effects) {
      const id = `${g.resource}|${k}`;
      const l = last.get(id);
      if (!l || l.rev < g.appliedAt) last.set(id, { rev: g.appliedAt, value: v, id: g.id });
    }
  }
  for (const r of resources) {
    const final = finalByResource.get(r)!;
    const replayed = states.get(r)!.data;
    const keysSeen = new Set([...final.keys(), ...replayed.keys(), ...[...last.keys()].filter((k) => k.startsWith(`${r}|`)).map((k) => k.slice(r.length + 1))]);
    for (const k of keysSeen) {
      const actual = final.get(k)?.value.toString() ?? null;
      const l = last.get(`${r}|${k}`);
      if ((replayed.get(k) ?? null) !== actual) violate("lost", () => `"${r}" ${k}: the history replays to ${replayed.get(k)} but etcd holds ${actual}`);
      if ((l?.value ?? null) !== actual) violate("lost", () => `"${r}" ${k}: etcd holds ${actual}, the last committed write (${l?.id ?? "none"}) left ${l?.value ?? null}`);
    }
  }
  return { violations, writes, grants, events: truth.events.length, refusalsJudged, policyRefusals, bindingRefusals };
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const xs = m.get(k);
  if (xs) xs.push(v);
  else m.set(k, [v]);
}

const cmp = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
const max = (a: bigint, b: bigint) => (a > b ? a : b);
const min = (a: bigint, b: bigint) => (a < b ? a : b);

/** The index of the last element of a sorted array for which before() holds (it holds on a prefix), or -1. */
function lastIndex<T>(xs: T[], before: (x: T) => boolean): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (before(xs[mid])) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** The index of the last op answered strictly before t, or -1. */
function lastBefore(byAnswer: Op[], t: number): number {
  let lo = 0;
  let hi = byAnswer.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (byAnswer[mid].t1 < t) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
