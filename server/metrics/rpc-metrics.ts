// Calls by method and code, and how long unary calls take, under the names gRPC's own Prometheus
// interceptors use (grpc_server_*), so that existing dashboards and alerts work unchanged.
import type { DescMethod } from "@bufbuild/protobuf";
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { codeName, type CallObserver } from "../rpc/call-observer.js";

const GRPC_TYPES = {
  unary: "unary",
  server_streaming: "server_stream",
  client_streaming: "client_stream",
  bidi_streaming: "bidi_stream",
} as const;

export function rpcMetrics(registry: Registry): CallObserver {
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

  // Each method's labelled series, looked up once.
  interface Series {
    labels: Record<(typeof labelNames)[number], string>;
    started: Counter.Internal;
    handled: Map<string, Counter.Internal>;
    seconds: ReturnType<typeof seconds.labels>;
    stream: boolean;
  }
  const series = new Map<DescMethod, Series>();
  const of = (method: DescMethod) => {
    let s = series.get(method);
    if (!s) {
      const labels = { grpc_type: GRPC_TYPES[method.methodKind], grpc_service: method.parent.typeName, grpc_method: method.name };
      s = { labels, started: started.labels(labels), handled: new Map(), seconds: seconds.labels(labels), stream: method.methodKind !== "unary" };
      series.set(method, s);
    }
    return s;
  };
  const handledOf = (s: Series, code: string) => {
    let h = s.handled.get(code);
    if (!h) s.handled.set(code, (h = handled.labels({ ...s.labels, grpc_code: code })));
    return h;
  };

  return ({ method }) => {
    const s = of(method);
    const begin = performance.now();
    s.started.inc();
    if (s.stream) open.inc({ grpc_service: s.labels.grpc_service, grpc_method: s.labels.grpc_method });
    return {
      end(error) {
        handledOf(s, codeName(error)).inc();
        if (s.stream) open.dec({ grpc_service: s.labels.grpc_service, grpc_method: s.labels.grpc_method });
        else s.seconds.observe((performance.now() - begin) / 1000);
      },
    };
  };
}
