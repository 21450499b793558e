// The Prometheus endpoint: GET /metrics on its own HTTP port, apart from the gRPC port, so that it can
// stay inside the pod or node network while the API is exposed.
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import type { HostPort } from "../config.js";

export interface MetricsEndpoint {
  readonly url: string;
  close(): Promise<void>;
}

export async function serveMetrics(at: HostPort, registry: Registry): Promise<MetricsEndpoint> {
  const server = http.createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("the metrics are at GET /metrics\n");
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
