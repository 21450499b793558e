// The audit trail's lines (docs/audit.md): one JSON object per decision that changed or refused who holds
// a resource or who may write to it. A record is made of names, numbers and ids only: a resource, a
// generation, a lease, a principal's name, an address. Nothing here is ever copied from a request or an
// error wholesale, so that no value, no token signature and no credential can reach the file.
import type { AcquireMode } from "../tokens/token.js";
import type { DomainEvent } from "../events/events.js";

/** What a line says happened. */
export type AuditKind = "granted" | "released" | "preempted" | "refused" | "session opened" | "session closed" | "keys loaded";

/** The refusals the trail keeps: the domain's (who holds what, whose token is current) and the pipeline's (who the caller is, what it may do). */
export const AUDITED_REFUSALS: ReadonlySet<string> = new Set([
  "RESOURCE_HELD",
  "NOT_HOLDER",
  "STALE_TOKEN",
  "LEASE_NOT_HELD",
  "PERMISSION_DENIED",
  "UNAUTHENTICATED",
  "TOKEN_SIGNATURE_INVALID",
]);

/** What the decision was about, as the domain knows it; the call's side (who, from where) is added by who writes it. */
export interface AuditDraft {
  /** When it was decided (ISO 8601, UTC, ms). */
  time: string;
  kind: AuditKind;
  resource?: string;
  /** Decimal strings: etcd's ids and revisions are 64-bit. */
  generation?: string;
  lease?: string;
  session?: string;
  mode?: AcquireMode;
  /** refused: the ErrorInfo reason the caller was told; operation: what was refused (acquire, release, put, ...). */
  reason?: string;
  operation?: string;
  /** preempted: who took the resource over, under which generation. */
  byPrincipal?: string;
  byGeneration?: string;
  /** keys loaded: which keys, their ids (never the keys), and why they were read. */
  keys?: "jwt verification" | "token signing";
  keyIds?: string[];
  keyCount?: number;
  trigger?: "startup" | "SIGHUP";
  /** A summary of refusals: how many it stands for, and since when (server/audit/trail.ts). */
  count?: number;
  since?: string;
}

/** Who asked, and through which call: absent for what no call decided (keys loaded at startup). */
export interface AuditCaller {
  requestId?: string;
  /** The service and method, as the request log names them. */
  rpc?: string;
  /** The authenticated principal's name; absent for a caller not (or not yet) authenticated. */
  principal?: string;
  /** The client end of the connection, host:port (a mesh sidecar's, behind one). */
  address?: string;
}

/** A line as written: the draft, the caller, and the replica that decided. */
export type AuditRecord = AuditDraft & AuditCaller & { replica: string };

const now = () => new Date().toISOString();

export function granted(e: { resource: string; generation: bigint; leaseId: bigint; onSession: boolean; mode?: AcquireMode }): AuditDraft {
  return {
    time: now(),
    kind: "granted",
    resource: e.resource,
    generation: String(e.generation),
    lease: String(e.leaseId),
    ...(e.onSession ? { session: String(e.leaseId) } : {}),
    mode: e.mode ?? "exclusive",
  };
}

export function released(e: { resource: string; generation: bigint; leaseId: bigint; onSession: boolean }): AuditDraft {
  return { time: now(), kind: "released", resource: e.resource, generation: String(e.generation), lease: String(e.leaseId), ...(e.onSession ? { session: String(e.leaseId) } : {}) };
}

/** The domain's preemption: the holder of generation on leaseId lost resource to byPrincipal's byGeneration. */
export type PreemptedEvent = Extract<DomainEvent, { type: "preempted" }>;

export function preempted(e: Omit<PreemptedEvent, "type">): AuditDraft {
  return {
    time: now(),
    kind: "preempted",
    resource: e.resource,
    generation: String(e.generation),
    lease: String(e.leaseId),
    byPrincipal: e.byPrincipal,
    byGeneration: String(e.byGeneration),
  };
}

export function sessionOpened(sessionId: bigint): AuditDraft {
  return { time: now(), kind: "session opened", session: String(sessionId), lease: String(sessionId) };
}

export function sessionClosed(sessionId: bigint): AuditDraft {
  return { time: now(), kind: "session closed", session: String(sessionId), lease: String(sessionId) };
}

export function refused(reason: string, r: { operation?: string; resource?: string; generation?: string; lease?: string }): AuditDraft {
  const out: AuditDraft = { time: now(), kind: "refused", reason };
  if (r.operation !== undefined) out.operation = r.operation;
  if (r.resource !== undefined) out.resource = r.resource;
  if (r.generation !== undefined) out.generation = r.generation;
  if (r.lease !== undefined) out.lease = r.lease;
  return out;
}

export function keysLoaded(keys: "jwt verification" | "token signing", keyIds: string[], keyCount: number, trigger: "startup" | "SIGHUP"): AuditDraft {
  return { time: now(), kind: "keys loaded", keys, keyIds, keyCount, trigger };
}
