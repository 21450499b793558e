// The server process: configuration, etcd (given or embedded), both services on one port, and a clean
// shutdown on SIGINT or SIGTERM. Leases are never revoked by a shutdown: other replicas carry on.
import { join, resolve } from "node:path";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Command } from "commander";
import pino from "pino";
import { createApp } from "./app.js";
import { serveOptions, toConfig, type Config } from "./config.js";
import { connectEtcd } from "./etcd/client.js";
import { EtcdMissingError, startEmbeddedEtcd, type EmbeddedEtcd } from "./etcd/embedded.js";
import { listen } from "./transport.js";

/** Requests larger than this are refused with RESOURCE_EXHAUSTED before they are parsed. */
const READ_MAX_BYTES = 4 * 1024 * 1024;

export async function serve(config: Config): Promise<void> {
  const log = pino({ level: config.logLevel, base: { service: "fencekeeper" } });
  let embedded: EmbeddedEtcd | undefined;
  let endpoints = config.etcdEndpoints;
  if (endpoints.length === 0) {
    const dataDir = resolve(config.dataDir, "etcd");
    try {
      embedded = await startEmbeddedEtcd({ dataDir, clientPort: config.embeddedEtcdPorts.client, peerPort: config.embeddedEtcdPorts.peer });
    } catch (err) {
      if (err instanceof EtcdMissingError) {
        process.stderr.write(`fencekeeper: ${err.message}\n`);
        process.exit(1);
      }
      throw err;
    }
    endpoints = [embedded.endpoint];
    log.info({ endpoint: embedded.endpoint, dataDir, log: join(dataDir, "etcd.log") }, "started embedded etcd");
  }

  const etcd = connectEtcd({ endpoints, callTimeoutMs: config.etcdTimeoutMs });
  const app = createApp({
    etcd,
    prefix: config.prefix,
    limits: { maxTtlSeconds: config.maxTtlSeconds, maxTxnOps: config.maxTxnOps, idempotencyTtlSeconds: config.idempotencyTtlSeconds },
    etcdTimeoutMs: config.etcdTimeoutMs,
    log,
  });
  const handler = connectNodeAdapter({ routes: (r) => app.routes(r), readMaxBytes: READ_MAX_BYTES });
  const transport = await listen(config.listen.host, config.listen.port, handler);
  const { address, port } = transport.address;
  const url = `http://${address.includes(":") ? `[${address}]` : address}:${port}`;
  log.info({ url, etcd: endpoints }, "serving");

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
    transport.stopAccepting();
    const grace = setTimeout(() => transport.destroy(), config.shutdownGraceMs);
    await transport.closed();
    clearTimeout(grace);
    app.close();
    etcd.close();
    await embedded?.stop();
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
}

const isMain = process.argv[1] && resolve(process.argv[1]).replace(/\.[jt]s$/, "") === resolve(import.meta.dirname, "main");
if (isMain) {
  const cmd = serveOptions(new Command("fencekeeper-server").description("Serve LeaseService and FencedStoreService"));
  cmd.parse();
  serve(toConfig(cmd.opts())).catch((err) => {
    process.stderr.write(`fencekeeper: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
