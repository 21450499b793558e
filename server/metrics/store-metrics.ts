// Mutations of the fenced store refused for their token, by reason: STALE_TOKEN (a newer generation has
// written), LEASE_NOT_HELD (FENCE_MODE_LIVE, the lease is gone), GENERATION_NOT_ISSUED.
import type { Interceptor } from "@connectrpc/connect";
import { Counter, type Registry } from "prom-client";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { tapCall } from "../observability/call-tap.js";
import { errorReason } from "../observability/error-reason.js";

const FENCING_REASONS = ["STALE_TOKEN", "LEASE_NOT_HELD", "GENERATION_NOT_ISSUED"];

export function storeMetrics(registry: Registry): Interceptor {
  const refused = new Counter({
    name: "fencekeeper_store_writes_refused_total",
    help: "Put, Delete and Txn calls refused for their token, by reason.",
    labelNames: ["grpc_method", "reason"],
    registers: [registry],
  });
  for (const reason of FENCING_REASONS) for (const m of ["Put", "Delete", "Txn"]) refused.inc({ grpc_method: m, reason }, 0);

  const { put, delete: del, txn } = FencedStoreService.method;
  return (next) => async (req) => {
    if (req.method !== put && req.method !== del && req.method !== txn) return next(req);
    return tapCall(next, req, {
      end(error) {
        const reason = errorReason(error);
        if (reason && FENCING_REASONS.includes(reason)) refused.inc({ grpc_method: req.method.name, reason });
      },
    });
  };
}
