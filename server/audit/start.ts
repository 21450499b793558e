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
    ...counters,
    onWritten: (n) => {
      counters.onWritten(n);
      failing = false;
    },
    // Said once per failure, not once per retry: a full disk stays full for a while.
    onError: (err, dropped) => {
      if (!failing) log.error({ err: err.message, auditLog: target, dropped }, "audit lines dropped: --audit-log cannot be written; calls go on");
      failing = true;
    },
  });
  log.info({ auditLog: target, replica }, "audit trail");
  return new AuditTrail(sink, replica);
}
