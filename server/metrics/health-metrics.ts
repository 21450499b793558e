// The health service's view as gauges: whether this replica serves, and whether etcd answered its last probe.
import { Gauge, type Registry } from "prom-client";
import type { HealthStatus } from "../health/status.js";

export function healthMetrics(registry: Registry, status: HealthStatus): void {
  new Gauge({
    name: "fencekeeper_serving",
    help: "1 while the health service reports SERVING (etcd answers and the server is not draining), else 0.",
    registers: [registry],
    collect() {
      this.set(status.serving ? 1 : 0);
    },
  });
  new Gauge({
    name: "fencekeeper_etcd_reachable",
    help: "1 if etcd answered the last health probe, else 0.",
    registers: [registry],
    collect() {
      this.set(status.etcdUp ? 1 : 0);
    },
  });
  new Gauge({
    name: "fencekeeper_etcd_out_of_space",
    help: "1 while etcd has its NOSPACE alarm raised (it refuses every write until an operator frees space and disarms it), else 0.",
    registers: [registry],
    collect() {
      this.set(status.etcdOutOfSpace ? 1 : 0);
    },
  });
}
