// Mutations of the fenced store refused for their token, by reason, as the store reports them
// (server/events/events.ts): STALE_TOKEN (a newer generation has written), LEASE_NOT_HELD
// (FENCE_MODE_LIVE, the lease is gone), GENERATION_NOT_ISSUED.
import { Counter, type Registry } from "prom-client";
import type { DomainEvents, WriteOp } from "../events/events.js";

const FENCING_REASONS = ["STALE_TOKEN", "LEASE_NOT_HELD", "GENERATION_NOT_ISSUED"];
/** Each mutation under the name of its RPC, as the label has always been. */
const METHODS: Record<WriteOp, string> = { put: "Put", delete: "Delete", txn: "Txn" };

export function storeMetrics(registry: Registry, events: DomainEvents): void {
  const refused = new Counter({
    name: "fencekeeper_store_writes_refused_total",
    help: "Put, Delete and Txn calls refused for their token, by reason.",
    labelNames: ["grpc_method", "reason"],
    registers: [registry],
  });
  for (const reason of FENCING_REASONS) for (const m of Object.values(METHODS)) refused.inc({ grpc_method: m, reason }, 0);

  events.on((e) => {
    if (e.type === "refused" && Object.hasOwn(METHODS, e.operation) && FENCING_REASONS.includes(e.reason)) {
      refused.inc({ grpc_method: METHODS[e.operation as WriteOp], reason: e.reason });
    }
  });
}
