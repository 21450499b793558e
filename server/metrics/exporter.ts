// The Prometheus endpoint: GET /metrics on its own HTTP port, apart from the gRPC port, so that it can
// stay inside the pod or node network while the API is exposed. The same port answers GET /readyz and
// GET /livez with the health service's "" and "liveness" (200 or 503): Kubernetes' gRPC probe speaks
// cleartext only, so a replica that serves its API over TLS is probed here (deploy/helm/fencekeeper).
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { HostPort } from "../rpc/transport.js";
import { LIVENESS, ServingStatus, type HealthStatus } from "../health/status.js";

export interface MetricsEndpoint {
  readonly url: string;
  close(): Promise<void>;
}

/** The health service names the probe paths report. */
const PROBES: Readonly<Record<string, string>> = { "/readyz": "", "/livez": LIVENESS };

export async function serveMetrics(at: HostPort, registry: Registry, health?: HealthStatus): Promise<MetricsEndpoint> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0];
    const probe = PROBES[path];
    if (req.method === "GET" && probe !== undefined && health) {
      const serving = health.of(probe) === ServingStatus.SERVING;
      res.writeHead(serving ? 200 : 503, { "content-type": "text/plain" }).end(serving ? "SERVING\n" : "NOT_SERVING\n");
      return;
    }
    if (req.method !== "GET" || path !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("the metrics are at GET /metrics (and health at GET /readyz and /livez)\n");
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { "content-type": registry.contentType }).end(body),
      (err) => res.writeHead(500, { "content-type": "text/plain" }).end(`collecting metrics failed: ${err}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) => reject(new Error(`--metrics-listen ${at.host}:${at.port}: ${err.message}`)));
    server.listen(at.port, at.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(":") ? `[${address}]` : address}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
