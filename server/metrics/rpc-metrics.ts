// Calls by method and code, and how long unary calls take, under the names gRPC's own Prometheus
// interceptors use (grpc_server_*), so that existing dashboards and alerts work unchanged.
import type { Interceptor } from "@connectrpc/connect";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { codeName, tapCall } from "../observability/call-tap.js";

const GRPC_TYPES = {
  unary: "unary",
  server_streaming: "server_stream",
  client_streaming: "client_stream",
  bidi_streaming: "bidi_stream",
} as const;

export function rpcMetrics(registry: Registry): Interceptor {
  const labelNames = ["grpc_type", "grpc_service", "grpc_method"] as const;
  const started = new Counter({ name: "grpc_server_started_total", help: "Calls started.", labelNames, registers: [registry] });
  const handled = new Counter({
    name: "grpc_server_handled_total",
    help: "Calls ended, by gRPC code (OK, NotFound, Unavailable, ...).",
    labelNames: [...labelNames, "grpc_code"],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: "grpc_server_handling_seconds",
    help: "Time from the start of a unary call to its answer. Acquire with wait set includes the time in line.",
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const open = new Gauge({
    name: "fencekeeper_streams_open",
    help: "Streams open now: KeepAlive, Observe, health Watch and reflection.",
    labelNames: ["grpc_service", "grpc_method"],
    registers: [registry],
  });

  return (next) => async (req) => {
    const labels = { grpc_type: GRPC_TYPES[req.method.methodKind], grpc_service: req.service.typeName, grpc_method: req.method.name };
    const stream = { grpc_service: labels.grpc_service, grpc_method: labels.grpc_method };
    const begin = performance.now();
    started.inc(labels);
    if (req.stream) open.inc(stream);
    return tapCall(next, req, {
      end(error) {
        handled.inc({ ...labels, grpc_code: codeName(error) });
        if (req.stream) open.dec(stream);
        else seconds.observe(labels, (performance.now() - begin) / 1000);
      },
    });
  };
}
