// How etcd answers: the time of each call the server makes to it, and its errors, by operation (the
// name each call site gives etcdCall: "acquire", "put", "describe", "lease grant", "health probe", ...).
// Lease renewals travel on one long-lived etcd stream and are not among them.
import { Counter, Histogram, type Registry } from "prom-client";
import type { EtcdCallObserver } from "../etcd/calls.js";

/** Operation names are constants at the call sites; anything else is folded into one value. */
const operationLabel = (what: string) => (/^[a-z][a-z -]{0,39}$/.test(what) ? what : "other");
const errorLabel = (err: unknown) => (err instanceof Error && /^\w{1,60}$/.test(err.name) ? err.name : "Error");

export function etcdMetrics(registry: Registry): EtcdCallObserver {
  const seconds = new Histogram({
    name: "fencekeeper_etcd_request_duration_seconds",
    help: "Round trip of each etcd call, by operation and result (ok, error).",
    labelNames: ["operation", "result"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const errors = new Counter({
    name: "fencekeeper_etcd_request_errors_total",
    help: "etcd calls that failed, by operation and error (e.g. GRPCUnavailableError, GRPCDeadlineExceededError).",
    labelNames: ["operation", "error"],
    registers: [registry],
  });
  const writes = new Histogram({
    name: "fencekeeper_etcd_request_writes",
    help: "Writes carried by each of the group commit's etcd requests (1: a write alone; more: a batch that rode one request).",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    registers: [registry],
  });
  const keys = new Counter({
    name: "fencekeeper_etcd_keys_read_total",
    help: "Keys carried by etcd's answers (ranges, and the ranges inside transactions), by operation: an operation whose keys per call grow with what is held reads more than its work.",
    labelNames: ["operation"],
    registers: [registry],
  });
  // Every etcd call and renewal is observed: look each operation's histograms up once.
  const byOperation = new Map<string, { ok: ReturnType<typeof seconds.labels>; error: ReturnType<typeof seconds.labels>; keys: ReturnType<typeof keys.labels> }>();
  return (what, s, error, carried, read) => {
    if (carried !== undefined) writes.observe(carried);
    let h = byOperation.get(what);
    if (!h) {
      const operation = operationLabel(what);
      h = { ok: seconds.labels({ operation, result: "ok" }), error: seconds.labels({ operation, result: "error" }), keys: keys.labels({ operation }) };
      byOperation.set(what, h);
    }
    if (read) h.keys.inc(read);
    if (error === undefined) return h.ok.observe(s);
    h.error.observe(s);
    errors.inc({ operation: operationLabel(what), error: errorLabel(error) });
  };
}
