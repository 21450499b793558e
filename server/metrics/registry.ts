// The one registry every metric of the server is kept in, with Node's process metrics (CPU, memory,
// event loop lag, GC) beside fencekeeper's own.
import { Registry, collectDefaultMetrics } from "prom-client";

export function createMetricsRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}
