// The audit trail as the server starts it (--audit-log): the sink, its metrics, and the trail.
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { auditMetrics } from "../metrics/audit-metrics.js";
import { AuditSink } from "./sink.js";
import { AuditTrail } from "./trail.js";

export function startAudit(target: string, replica: string, metrics: Registry, log: Logger): AuditTrail {
  const counters = auditMetrics(metrics);
  let failing = false;
  const sink = new AuditSink({
    target,
    onWritten: counters.onWritten,
    onDropped: counters.onDropped,
    // Said once per failure, not once per retry: a full disk stays full for a while.
    onError: (err, meaning) => {
      counters.failing(true);
      if (!failing) log.error({ err: err.message, auditLog: target }, `audit lines dropped: --audit-log cannot be written (${meaning}); calls go on, and it is tried again every second`);
      failing = true;
    },
    onRecovered: () => {
      counters.failing(false);
      if (failing) log.warn({ auditLog: target }, "audit lines are written again to --audit-log (fencekeeper_audit_dropped_total counts the lines lost meanwhile)");
      failing = false;
    },
  });
  log.info({ auditLog: target, replica }, "audit trail");
  return new AuditTrail(sink, replica, counters.onSummarized);
}
