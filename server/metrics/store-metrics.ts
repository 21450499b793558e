// Mutations of the fenced store refused for their token, by reason: STALE_TOKEN (a newer generation has
// written), LEASE_NOT_HELD (FENCE_MODE_LIVE, the lease is gone), GENERATION_NOT_ISSUED.
import { Counter, type Registry } from "prom-client";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { CallObserver } from "../observability/call-observer.js";
import { errorReason } from "../observability/error-reason.js";

const FENCING_REASONS = ["STALE_TOKEN", "LEASE_NOT_HELD", "GENERATION_NOT_ISSUED"];

export function storeMetrics(registry: Registry): CallObserver {
  const refused = new Counter({
    name: "fencekeeper_store_writes_refused_total",
    help: "Put, Delete and Txn calls refused for their token, by reason.",
    labelNames: ["grpc_method", "reason"],
    registers: [registry],
  });
  for (const reason of FENCING_REASONS) for (const m of ["Put", "Delete", "Txn"]) refused.inc({ grpc_method: m, reason }, 0);

  const { put, delete: del, txn } = FencedStoreService.method;
  return ({ method }) => {
    if (method !== put && method !== del && method !== txn) return undefined;
    return {
      end(error) {
        if (!error) return;
        const reason = errorReason(error);
        if (reason && FENCING_REASONS.includes(reason)) refused.inc({ grpc_method: method.name, reason });
      },
    };
  };
}
