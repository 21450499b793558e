// What a fuzz run counts and finds: how each method was answered, and for each invariant how often it
// was checked and broken, with the first breach kept whole (its case, so it can be sent again).

/** The invariants, in the order the table shows them. */
export const INVARIANTS = {
  alive: "the server process never exits",
  answered: "every call is answered: no call goes its deadline + 10 s without progress (bytes taken or answered)",
  status: "every call ends with a status (no reset, no HTTP error without grpc-status)",
  notInternal: "no INTERNAL or UNKNOWN",
  hopeless: "input that can never succeed: not OK, and not a retryable code",
  wellFormed: "grpc-message / Connect error body well formed (printable ASCII, percent-encoded UTF-8)",
  writes: "every accepted Put/Delete/Txn (and write of a Batch) is allowed by the model (token issued to the caller, generation >= fence, LIVE lease not released)",
  leases: "no Renew/KeepAlive/Release/CloseSession succeeds on another principal's or a released lease",
  authenticated: "callers without valid credentials are refused (LeaseService, FencedStoreService)",
  issued: "Acquire hands out tokens of the caller, for the resource asked",
  etcd: "at the end, etcd holds no value written by a refused call, and no fence beyond an issued generation",
  watchers: "no leak: etcd's watcher count returns to its start value",
  fds: "no leak: the server's open file descriptors return to their start count",
  closeWait: "no leak: no socket of the server left in CLOSE_WAIT",
  rss: "the server's RSS stays bounded",
  metrics: "the server's own metrics agree: INTERNAL counted no more than answered (or left without status), no stream left open",
} as const;
export type Invariant = keyof typeof INVARIANTS;

export const CODE_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

export class Findings {
  readonly outcomes = new Map<string, Map<string, number>>();
  readonly byWire = new Map<string, number>();
  readonly checks = new Map<Invariant, { checked: number; broken: number; first?: string }>();
  requests = 0;
  /** Time to the answer of calls answered with a status, ms, for the figures. */
  readonly latencies: number[] = [];
  streamMessages = 0;
  readonly figures: Record<string, string | number> = {};
  /** Told of every breach (FUZZ_VERBOSE), not only the first of each invariant. */
  onBreach?: (inv: Invariant, example: string) => void;

  constructor() {
    for (const k of Object.keys(INVARIANTS) as Invariant[]) this.checks.set(k, { checked: 0, broken: 0 });
  }

  outcome(method: string, wire: string, outcome: string): void {
    let m = this.outcomes.get(method);
    if (!m) this.outcomes.set(method, (m = new Map()));
    m.set(outcome, (m.get(outcome) ?? 0) + 1);
    this.byWire.set(wire, (this.byWire.get(wire) ?? 0) + 1);
  }

  /** Counts one check of an invariant; keeps the first breach's description. */
  check(inv: Invariant, ok: boolean, example?: () => string): boolean {
    const c = this.checks.get(inv)!;
    c.checked++;
    if (!ok) {
      c.broken++;
      if (c.first === undefined || this.onBreach) {
        const text = example?.() ?? "(no example)";
        c.first ??= text;
        this.onBreach?.(inv, text);
      }
    }
    return ok;
  }

  get broken(): [Invariant, { checked: number; broken: number; first?: string }][] {
    return [...this.checks].filter(([, c]) => c.broken > 0);
  }

  /** The tables: answers per method, calls per wire, invariants. */
  table(): string {
    const lines: string[] = [];
    const cols = ["OK", "INVALID_ARGUMENT", "FAILED_PRECONDITION", "NOT_FOUND", "PERMISSION_DENIED", "UNAUTHENTICATED", "DEADLINE_EXCEEDED", "cancelled", "other"];
    const short = ["OK", "INVALID", "FAILED_PRE", "NOT_FOUND", "PERM_DENIED", "UNAUTH", "DEADLINE", "cancelled", "other"];
    lines.push(["method".padEnd(16), "calls".padStart(9), ...short.map((s) => s.padStart(11))].join(" "));
    const totals = new Map<string, number>();
    for (const [method, m] of [...this.outcomes].sort()) {
      let calls = 0;
      const row = new Map<string, number>();
      for (const [k, n] of m) {
        calls += n;
        const col = cols.includes(k) ? k : "other";
        row.set(col, (row.get(col) ?? 0) + n);
      }
      for (const [k, n] of row) totals.set(k, (totals.get(k) ?? 0) + n);
      lines.push([method.padEnd(16), String(calls).padStart(9), ...cols.map((c) => String(row.get(c) ?? 0).padStart(11))].join(" "));
    }
    lines.push(["total".padEnd(16), String(this.requests).padStart(9), ...cols.map((c) => String(totals.get(c) ?? 0).padStart(11))].join(" "));
    const other = new Map<string, number>();
    for (const m of this.outcomes.values()) for (const [k, n] of m) if (!cols.includes(k)) other.set(k, (other.get(k) ?? 0) + n);
    if (other.size) lines.push(`  other: ${[...other].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(", ")}`);
    lines.push("");
    lines.push(`calls per wire: ${[...this.byWire].sort().map(([k, n]) => `${k} ${n}`).join(", ")}; stream messages sent: ${this.streamMessages}`);
    lines.push("");
    lines.push(["invariant".padEnd(14), "checked".padStart(10), "broken".padStart(8)].join(" "));
    for (const [k, c] of this.checks) lines.push([k.padEnd(14), String(c.checked).padStart(10), String(c.broken).padStart(8), "  " + INVARIANTS[k]].join(" "));
    for (const [k, c] of this.broken) lines.push(`\nFIRST BREACH of ${k}: ${c.first}`);
    if (Object.keys(this.figures).length) {
      lines.push("");
      for (const [k, v] of Object.entries(this.figures)) lines.push(`${k}: ${v}`);
    }
    return lines.join("\n");
  }
}
