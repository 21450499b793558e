// The audit trail's own health (server/audit/): lines written, and lines dropped because the queue was
// full or the file could not be written; each line is counted once, as one or the other. A dropped line
// is a decision the trail does not show: alert on any increase, or on the sink failing.
import { Counter, Gauge, type Registry } from "prom-client";

export interface AuditCounters {
  onWritten(n: number): void;
  onDropped(n: number): void;
  /** Refusals folded into a summary line rather than written each on its own line. */
  onSummarized(n: number): void;
  /** Whether --audit-log cannot be written now (opened, or written to). */
  failing(now: boolean): void;
}

export function auditMetrics(registry: Registry): AuditCounters {
  const written = new Counter({ name: "fencekeeper_audit_written_total", help: "Audit lines written to --audit-log.", registers: [registry] });
  const dropped = new Counter({
    name: "fencekeeper_audit_dropped_total",
    help: "Audit lines dropped: the queue was full, or --audit-log could not be written (calls went on).",
    registers: [registry],
  });
  const summarized = new Counter({
    name: "fencekeeper_audit_summarized_total",
    help: "Refusals of callers not authenticated (or refused for their Host) counted in a summary line instead of a line each.",
    registers: [registry],
  });
  const failing = new Gauge({ name: "fencekeeper_audit_sink_failing", help: "1 while --audit-log cannot be opened or written (lines are dropped), else 0.", registers: [registry] });
  failing.set(0);
  return { onWritten: (n) => written.inc(n), onDropped: (n) => dropped.inc(n), onSummarized: (n) => summarized.inc(n), failing: (now) => failing.set(now ? 1 : 0) };
}
