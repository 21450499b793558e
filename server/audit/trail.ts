// The audit trail: the decisions of this replica, told by the domain (server/events/events.ts) and by the
// call pipeline (server/rpc/), written as lines (record.ts) to the sink (sink.ts).
//
// A decision made during a call is kept with the call (its values) and written when the call ends, with
// who asked (the principal, the address), the request id and the method: the domain's events do not know
// the caller, and a refusal is told twice, once by the domain as it refuses ("refused": the operation)
// and once by the call's status (ErrorInfo: the token's generation, the lease), which make one line. A
// refusal the domain never saw (no credentials, a denied verb, a forged token) is the call's status alone.
// A decision made outside any call is written at once.
//
// Refusals of callers nobody knows (no credentials, or a Host the server does not answer) cost the caller
// nothing to repeat: one line each would let one client write the disk full. The first one from an
// address, for a reason and a method, is written as it happens; the ones after it within SUMMARY_MS are
// counted, and written as one summary line (`count`, `since`) at the end of that time or at shutdown.
import { createContextKey, type ConnectError, type ContextValues } from "@connectrpc/connect";
import { ErrorInfoSchema, type ErrorInfo } from "../../gen/ts/google/rpc/error_details_pb.js";
import { CALLER, GRANTS, PEER } from "../auth/access.js";
import { DomainError } from "../errors/errors.js";
import type { DomainEvent, DomainEvents } from "../events/events.js";
import type { CallObserver, CallStart } from "../rpc/call-observer.js";
import { currentCall, keepCallScope } from "../rpc/call-scope.js";
import {
  AUDITED_REFUSALS,
  granted,
  keysLoaded,
  preempted,
  refused,
  released,
  sessionClosed,
  sessionOpened,
  type AuditCaller,
  type AuditDraft,
} from "./record.js";
import type { AuditSink } from "./sink.js";

/** The services whose calls decide anything: health and reflection decide nothing. */
const AUDITED_SERVICES = new Set(["fencekeeper.v1.LeaseService", "fencekeeper.v1.FencedStoreService"]);

/** Refusals folded into summaries: those of callers with no principal, for these reasons. */
const SUMMARIZED = new Set(["UNAUTHENTICATED", "PERMISSION_DENIED"]);
/** How long one summary gathers refusals. */
const SUMMARY_MS = 10_000;
/** Summaries open at once; beyond, refusals from further addresses share one (without an address). */
const MAX_SUMMARIES = 1000;

interface Summary {
  draft: AuditDraft;
  caller: AuditCaller;
  since: string;
  count: number;
}

/** A call's decisions so far, written at its end. */
const DECIDED = createContextKey<AuditDraft[] | undefined>(undefined, { description: "the call's audited decisions" });

export class AuditTrail {
  private readonly summaries = new Map<string, Summary>();
  private summaryTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sink: AuditSink,
    /** Which replica decided: every line names it. */
    readonly replica: string,
    /** Told of each refusal folded into a summary. */
    private readonly onSummarized: (n: number) => void = () => undefined,
  ) {
    // The domain's events find the call they belong to.
    keepCallScope();
  }

  /** Hears the domain; returns what stops it. */
  listen(events: DomainEvents): () => void {
    return events.on((e) => this.heard(e));
  }

  /** A domain event. */
  heard(e: DomainEvent): void {
    const draft = draftOf(e);
    if (!draft) return;
    const call = currentCall();
    if (!call) return this.write(draft, {});
    const decided = call.get(DECIDED);
    if (decided) decided.push(draft);
    else call.set(DECIDED, [draft]);
  }

  /** Watches the calls of the services that decide: at each end, writes the call's decisions and its refusal. */
  observer(): CallObserver {
    return (call) => (AUDITED_SERVICES.has(call.method.parent.typeName) ? { end: (error) => this.ended(call, error) } : undefined);
  }

  /** Keys the server verifies or signs with were read (their ids, never the keys). */
  keysLoaded(keys: "jwt verification" | "token signing", keyIds: string[], keyCount: number, trigger: "startup" | "SIGHUP"): void {
    this.write(keysLoaded(keys, keyIds, keyCount, trigger), {});
  }

  /** The file is opened again by path before the next line (after a rotation). */
  reopen(): void {
    this.sink.reopen();
  }

  /** Writes the summaries gathered so far, flushes what is queued (at most timeoutMs) and closes the file. */
  close(timeoutMs: number): Promise<void> {
    this.flushSummaries();
    return this.sink.close(timeoutMs);
  }

  private ended(call: CallStart, error: ConnectError | undefined): void {
    const values = call.values?.();
    const decided = values?.get(DECIDED) ?? [];
    const info = error?.findDetails(ErrorInfoSchema)[0] as ErrorInfo | undefined;
    if (info && AUDITED_REFUSALS.has(info.reason)) {
      const m = info.metadata;
      const told = { resource: m.resource, generation: m.generation, lease: m.lease_id };
      const same = decided.find((d) => d.kind === "refused" && d.reason === info.reason);
      if (same) {
        same.generation ??= told.generation;
        same.lease ??= told.lease;
      } else {
        decided.push(refused(info.reason, { ...told, resource: told.resource ?? onlyResource(values) }));
      }
    }
    // A Batch's writes denied by the policy each on its own (the call went on): the decisions say which.
    const grants = values?.get(GRANTS);
    if (grants) {
      for (const [resource, d] of grants) {
        if (d instanceof DomainError && d.reason === "PERMISSION_DENIED" && !decided.some((x) => x.reason === d.reason && x.resource === resource)) {
          decided.push(refused(d.reason, { resource }));
        }
      }
    }
    if (decided.length === 0) return;
    const caller = callerOf(call, values);
    if (caller.principal === undefined && decided.every((d) => d.kind === "refused" && SUMMARIZED.has(d.reason ?? ""))) {
      for (const d of decided) this.summarize(d, caller, values?.get(PEER).address ?? "");
      return;
    }
    for (const d of decided) this.write(d, caller);
  }

  /** The first such refusal in a while is written; the next ones are counted into its summary. */
  private summarize(d: AuditDraft, caller: AuditCaller, address: string): void {
    const own = `${d.reason}|${caller.rpc}|${address}`;
    const full = !this.summaries.has(own) && this.summaries.size >= MAX_SUMMARIES;
    const key = full ? `${d.reason}|${caller.rpc}|*` : own;
    const open = this.summaries.get(key);
    if (open) {
      open.count++;
      this.onSummarized(1);
      return;
    }
    const summaryCaller: AuditCaller = { rpc: caller.rpc, ...(full ? {} : { address }) };
    this.summaries.set(key, { draft: refused(d.reason!, {}), caller: summaryCaller, since: d.time, count: 0 });
    this.summaryTimer ??= setInterval(() => this.flushSummaries(), SUMMARY_MS).unref();
    if (full) {
      // The refusal that opened the shared summary is its first count.
      this.summaries.get(key)!.count++;
      this.onSummarized(1);
    } else {
      this.write(d, caller);
    }
  }

  /** One line per summary that counted any refusal; all are closed. */
  private flushSummaries(): void {
    const until = new Date().toISOString();
    for (const s of this.summaries.values()) {
      if (s.count > 0) this.write({ ...s.draft, time: until, since: s.since, count: s.count }, s.caller);
    }
    this.summaries.clear();
    clearInterval(this.summaryTimer);
    this.summaryTimer = undefined;
  }

  private write(d: AuditDraft, caller: AuditCaller): void {
    // Time and kind first, for a person reading the file.
    const { time, kind, ...rest } = d;
    this.sink.write({ time, kind, replica: this.replica, ...caller, ...rest });
  }
}

function draftOf(e: DomainEvent): AuditDraft | undefined {
  switch (e.type) {
    case "granted":
      return granted(e);
    case "released":
      return released(e);
    case "preempted":
      return preempted(e);
    case "session opened":
      return sessionOpened(e.sessionId);
    case "session closed":
      return sessionClosed(e.sessionId);
    case "refused":
      return AUDITED_REFUSALS.has(e.reason)
        ? refused(e.reason, { operation: e.operation, resource: e.resource, ...(e.generation !== undefined ? { generation: String(e.generation) } : {}) })
        : undefined;
    default:
      return undefined;
  }
}

/** The resource of a call the policy decided on one resource only (a refusal whose error names none). */
function onlyResource(values: ContextValues | undefined): string | undefined {
  const grants = values?.get(GRANTS);
  return grants?.size === 1 ? [...grants.keys()][0] : undefined;
}

function callerOf(call: CallStart, values: ContextValues | undefined): AuditCaller {
  const out: AuditCaller = { requestId: call.requestId, rpc: `${call.method.parent.typeName}/${call.method.name}` };
  if (!values) return out;
  const principal = values.get(CALLER);
  if (principal.via !== "anonymous") out.principal = principal.name;
  const peer = values.get(PEER);
  if (peer.address) out.address = peer.address.includes(":") ? `[${peer.address}]:${peer.port}` : `${peer.address}:${peer.port}`;
  return out;
}
