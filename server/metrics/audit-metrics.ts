// The audit trail's own health (server/audit/): lines written, and lines dropped because the queue was
// full or the file could not be written. A dropped line is a decision the trail does not show: alert on
// any increase.
import { Counter, type Registry } from "prom-client";

export interface AuditCounters {
  onWritten(n: number): void;
  onDropped(n: number): void;
}

export function auditMetrics(registry: Registry): AuditCounters {
  const written = new Counter({ name: "fencekeeper_audit_written_total", help: "Audit lines written to --audit-log.", registers: [registry] });
  const dropped = new Counter({
    name: "fencekeeper_audit_dropped_total",
    help: "Audit lines dropped: the queue was full, or --audit-log could not be written (calls went on).",
    registers: [registry],
  });
  return { onWritten: (n) => written.inc(n), onDropped: (n) => dropped.inc(n) };
}
