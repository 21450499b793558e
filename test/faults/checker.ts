// The checker: judges a run's client history against etcd's own history of the same run, and reports,
// per property, how many violations it found and the first one. Nothing here trusts a client's view of
// what happened over etcd's: an answer is a claim that etcd's history confirms or refutes.
//
// How etcd's history is read (the layout is keys.ts's; this file only asks it which key is which):
// the changes of one resource at one revision form a batch. A mutation writes its data keys and the
// resource's fence in one transaction, so a batch with a fence write is one or more mutations under
// one generation (the committer packs mutations under one token into one inner transaction). Each put
// value names the write that made it (`<write id>/<i>`, unique in a run), so puts say who wrote them;
// deletes and fence writes are explained by the writes that claim that revision (their answers) or,
// failing that, by an ambiguous write that could have made them.
import type { IKeyValue } from "etcd3";
import { decodeGeneration, decodeOwner, type KeyLayout } from "../../server/etcd/keys.js";
import type { EtcdEvent, EtcdTruth } from "./etcd-history.js";
import { isWrite, type Op } from "./history.js";

export const PROPERTIES = {
  order: "per resource, generations of accepted writes never decrease in revision order",
  lost: "no acknowledged write is lost (in etcd at its revision; final state = last committed write per key)",
  refused: "a refused or failed write changed nothing (no revision carries it)",
  live: "under LIVE, no write committed once its generation's lease was gone",
  owners: "generations strictly increase per resource; one holder per resource at a revision",
  ambiguous: "an ambiguous answer is resolved by the history, and applied at most once",
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
}

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
  owner?: { gen: bigint; lease: bigint; holder: string };
  lastGrant: bigint;
  fence: bigint;
  data: Map<string, string>;
  granted: Set<bigint>;
  /** Grants whose Acquire was answered LEASE_NOT_FOUND: nobody has their token. */
  orphans: Set<bigint>;
}

export function check(ops: Op[], truth: EtcdTruth, keys: KeyLayout, resources: string[]): CheckResult {
  const violations = Object.fromEntries(Object.keys(PROPERTIES).map((p) => [p, { count: 0 }])) as Record<Property, Violations>;
  const violate = (p: Property, what: () => string) => {
    const v = violations[p];
    if (v.count++ === 0) v.first = what();
  };

  // --- the client history, as writes (with their retries) and acquisitions ---
  const groups = new Map<string, WriteGroup>();
  for (const op of ops.filter(isWrite)) {
    let g = groups.get(op.write!);
    if (!g) {
      g = { id: op.write!, resource: op.resource, gen: BigInt(op.gen!), lease: BigInt(op.lease!), mode: op.mode!, effects: op.effects!, attempts: [], status: "fail" };
      groups.set(g.id, g);
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
  const acquireByHolder = new Map(acquires.map((o) => [o.holder!, o]));

  // --- etcd's history, in batches of one resource at one revision ---
  const kindOf = new Map<string, { resource: string; kind: "owner" | "fence" }>();
  for (const r of resources) {
    kindOf.set(keys.ownerKey(r).toString(), { resource: r, kind: "owner" });
    kindOf.set(keys.fenceKey(r).toString(), { resource: r, kind: "fence" });
  }
  const dataRoots = resources.map((r) => ({ resource: r, root: keys.dataPrefix(r) }));
  const batches = new Map<string, Batch>();
  for (const e of truth.events) {
    const k = e.kv.key.toString();
    const known = kindOf.get(k);
    const data = known ? undefined : dataRoots.find((d) => e.kv.key.subarray(0, d.root.length).equals(d.root));
    const resource = known?.resource ?? data?.resource;
    if (!resource) continue; // queue keys, issued keys, idempotency records, bindings, signing keys
    const id = `${e.rev}|${resource}`;
    let b = batches.get(id);
    if (!b) batches.set(id, (b = { rev: e.rev, resource, owner: [], data: [] }));
    if (known?.kind === "owner") b.owner.push(e);
    else if (known?.kind === "fence") b.fence = e.type === "put" ? decodeGeneration(e.kv.value) : -1n;
    else b.data.push({ key: keys.storeKey(resource, e.kv.key), value: e.type === "put" ? e.kv.value.toString() : null });
  }

  const states = new Map<string, ResourceState>(resources.map((r) => [r, { lastGrant: 0n, fence: 0n, data: new Map(), granted: new Set(), orphans: new Set() }]));
  let grants = 0;
  const grantOf = new Map<string, { gen: bigint; lease: bigint }>();
  for (const b of batches.values()) {
    const s = states.get(b.resource)!;
    const where = `revision ${b.rev} of "${b.resource}"`;
    // Which writes made this batch.
    const here = new Set<WriteGroup>(okAt.get(`${b.resource}|${b.rev}`) ?? []);
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
    if (b.fence !== undefined && here.size === 0 && !fenceCreated) {
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
    for (const e of b.owner) {
      if (e.type === "delete") {
        s.owner = undefined;
        continue;
      }
      const o = decodeOwner(e.kv);
      if (BigInt(e.kv.create_revision) !== e.rev) {
        if (!s.owner || s.owner.lease !== o.leaseId || s.owner.holder !== o.holder) {
          violate("owners", () => `${where}: the owner key was overwritten by ${o.holder} (lease ${o.leaseId}) while held by ${s.owner?.holder} (lease ${s.owner?.lease})`);
        }
        continue;
      }
      grants++;
      if (s.owner) violate("owners", () => `${where}: ${o.holder} granted while ${s.owner!.holder} held it`);
      if (o.generation <= s.lastGrant) violate("owners", () => `${where}: generation ${o.generation} granted after generation ${s.lastGrant}`);
      const acq = acquireByHolder.get(o.holder);
      if (!acq) violate("owners", () => `${where}: a grant to "${o.holder}", which no Acquire of the history asked for`);
      else if (acq.outcome === "fail" || acq.outcome === "unsent") {
        // An Acquire whose lease ended before the grant could be answered (LEASE_NOT_FOUND) leaves a
        // grant in etcd that nobody holds a token of: it must end with its lease, and nothing may be
        // written under it. Any other refusal must not have granted anything.
        if (acq.reason === "LEASE_NOT_FOUND") s.orphans.add(o.generation);
        else violate("owners", () => `${where}: a grant to ${o.holder}, whose Acquire was answered ${acq.code} ${acq.reason ?? ""}`);
      }
      s.owner = { gen: o.generation, lease: o.leaseId, holder: o.holder };
      s.lastGrant = o.generation;
      s.granted.add(o.generation);
      grantOf.set(o.holder, s.owner);
    }
    if (b.fence !== undefined) s.fence = b.fence;
    for (const d of b.data) {
      if (d.value === null) s.data.delete(d.key);
      else s.data.set(d.key, d.value);
    }
  }

  for (const [r, s] of states) {
    if (s.owner && s.orphans.has(s.owner.gen)) violate("owners", () => `"${r}": the grant of generation ${s.owner!.gen}, whose Acquire was refused, still owns it at the end`);
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
      const grant = grantOf.get(a.holder!);
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
  // The final contents: each key as its last committed write left it, and as the history replays it.
  const finalByResource = new Map<string, Map<string, IKeyValue>>(resources.map((r) => [r, new Map()]));
  for (const kv of truth.final) {
    const d = dataRoots.find((x) => kv.key.subarray(0, x.root.length).equals(x.root));
    if (d) finalByResource.get(d.resource)!.set(keys.storeKey(d.resource, kv.key), kv);
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
  return { violations, writes, grants, events: truth.events.length };
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const xs = m.get(k);
  if (xs) xs.push(v);
  else m.set(k, [v]);
}

const cmp = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
const max = (a: bigint, b: bigint) => (a > b ? a : b);

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
