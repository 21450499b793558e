// The ledger: what each caller may cost, charged in the call pipeline from one table (table.ts) before a
// call's handler runs. A caller is its principal; without authentication, its connection (as every
// per-caller budget kept on a replica).
//
// Charged here, on this replica: the bytes a call writes into etcd's history (history-rate.ts), and the
// streams and waiting Acquires a caller holds, each given back when its call ends. The budgets only etcd
// can keep exact across replicas (leases, bytes per lease, bytes per resource) are decided by the domain
// in etcd, in or beside the transaction that writes, and the table names where.
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, type ConnectError, type ContextValues } from "@connectrpc/connect";
import { exhausted } from "./budget.js";
import { HistoryRate } from "./history-rate.js";
import { costOf } from "./table.js";

export interface LedgerSettings {
  /** KeepAlive and Observe streams one caller may have open on this replica. */
  streams: number;
  /** Acquire calls with wait one caller may have in progress on this replica. */
  waiters: number;
  /** Bytes a second one caller may write into etcd's history on this replica; 0: no budget. */
  historyBytesPerSecond: number;
}

type Held = "streams" | "waiters";

/**
 * The codes of a call that changed nothing in etcd (docs/errors.md): its history bytes are given back.
 * UNAVAILABLE, DEADLINE_EXCEEDED, CANCELED and INTERNAL may come after a write: they keep the charge.
 */
const NOTHING_WRITTEN = new Set([
  Code.InvalidArgument,
  Code.FailedPrecondition,
  Code.NotFound,
  Code.AlreadyExists,
  Code.Aborted,
  Code.ResourceExhausted,
  Code.PermissionDenied,
  Code.Unauthenticated,
  Code.OutOfRange,
]);

const WHAT: Record<Held, string> = {
  streams: "KeepAlive and Observe streams open",
  waiters: "Acquire calls waiting",
};

export class Ledger {
  private readonly held = new Map<string, number>();
  private readonly history: HistoryRate;

  constructor(
    private readonly settings: LedgerSettings,
    /** Who pays for a call: its principal, or its connection. */
    private readonly callerOf: (values: ContextValues) => string,
    /** Told of every call, so that the load's shrinking budgets know when callers share the replica (presence.ts). */
    private readonly presence?: { seen(values: ContextValues): void },
  ) {
    this.history = new HistoryRate(settings.historyBytesPerSecond);
  }

  /**
   * Charges the call to its caller from its row of the table, or throws the refusal of the budget it is
   * over (nothing charged then). The function returned is called once the call ends, with its failure if
   * it failed: it gives back what the call holds, and the history bytes of a call that wrote nothing (a
   * refusal or bad input: "bad input changes nothing", and costs nothing either).
   */
  charge(method: DescMethod, req: unknown, values: ContextValues): ((failed?: ConnectError) => void) | undefined {
    this.presence?.seen(values);
    const row = costOf(method);
    if (!row.history && !row.holds) return undefined;
    const caller = this.callerOf(values);
    const slot = row.holds?.(req as never);
    const cost = row.history?.(req as never) ?? 0;
    const give = slot ? this.take(caller, slot) : undefined;
    try {
      this.history.charge(caller, cost);
    } catch (err) {
      give?.();
      throw err;
    }
    return (failed) => {
      give?.();
      if (failed && NOTHING_WRITTEN.has(failed.code)) this.history.refund(caller, cost);
    };
  }

  /**
   * Takes one of the slots of the call's caller, for a call that holds several (a LeaseBatch's waiting
   * operations, each as a waiting Acquire would); the function returned gives it back (once).
   */
  hold(values: ContextValues, kind: Held): () => void {
    return this.take(this.callerOf(values), kind);
  }

  /** Takes one of the caller's slots; the function returned gives it back (once). */
  private take(caller: string, kind: Held): () => void {
    const key = `${kind}\0${caller}`;
    const n = this.held.get(key) ?? 0;
    const cap = this.settings[kind];
    if (n >= cap) {
      throw exhausted(kind, {
        who: `this caller has ${n} ${WHAT[kind]} on this server`,
        limit: cap,
        used: n,
        unit: WHAT[kind],
        hint: "end some before starting more",
      });
    }
    this.held.set(key, n + 1);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left === 0) this.held.delete(key);
      else this.held.set(key, left);
    };
  }
}
