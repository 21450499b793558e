// The server process: configuration, etcd (given or embedded), both services with health and reflection
// on one port, metrics on another, and a graceful shutdown on SIGTERM or SIGINT (server/lifecycle/drain.ts).
// Leases are never revoked by a shutdown: other replicas carry on.
import { join, resolve } from "node:path";
import type { ConnectRouter } from "@connectrpc/connect";
import { createRegistry } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { ErrorInfoSchema } from "../gen/ts/google/rpc/error_details_pb.js";
import { FencedStoreService } from "../gen/ts/fencekeeper/v1/store_pb.js";
import { LeaseService } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { createApp } from "./app.js";
import { auditKeys } from "./audit/keys-loaded.js";
import { startAudit } from "./audit/start.js";
import { Access } from "./auth/access.js";
import { credentialsOf } from "./rpc/authentication.js";
import { Authenticator } from "./auth/authenticator.js";
import { PolicyFile } from "./auth/policy-file.js";
import { serverCommand } from "./command.js";
import type { Config, EtcdTls } from "./config.js";
import { connectEtcd, type EtcdConnectOptions } from "./etcd/client.js";
import { EtcdLimitsError } from "./etcd/limits-probe.js";
import { EtcdMissingError, startEmbeddedEtcd, type EmbeddedEtcd } from "./etcd/embedded.js";
import { Health } from "../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { probeEtcd } from "./health/etcd-probe.js";
import { healthService } from "./health/health-service.js";
import { HealthStatus } from "./health/status.js";
import { drain } from "./lifecycle/drain.js";
import { InFlightCalls } from "./rpc/in-flight.js";
import { etcdMetrics } from "./metrics/etcd-metrics.js";
import { serveMetrics, type MetricsEndpoint } from "./metrics/exporter.js";
import { consoleHandler } from "./console/console-server.js";
import { hostRule } from "./rpc/host-rule.js";
import { healthMetrics } from "./metrics/health-metrics.js";
import { leaseMetrics } from "./metrics/lease-metrics.js";
import { createMetricsRegistry } from "./metrics/registry.js";
import { rpcMetrics } from "./metrics/rpc-metrics.js";
import { storeMetrics } from "./metrics/store-metrics.js";
import { createLogger, logWritten } from "./observability/logger.js";
import { allOf } from "./rpc/call-observer.js";
import { ownershipLog } from "./observability/ownership-log.js";
import { requestLog } from "./observability/request-log.js";
import { registerReflection } from "./reflection/reflection-service.js";
import { connectAdapter } from "./rpc/connect-adapter.js";
import { CallPipeline, handlers } from "./rpc/pipeline.js";
import { unaryFastPath } from "./rpc/unary-fast-path.js";
import { listen } from "./rpc/transport.js";
import { installStrictUtf8, strictUtf8Json } from "./wire/utf8.js";
import type { Tracing } from "./tracing/setup.js";

/** Requests larger than this are refused with RESOURCE_EXHAUSTED before they are parsed. */
const READ_MAX_BYTES = 4 * 1024 * 1024;

function etcdCredentials(tls: EtcdTls | undefined): EtcdConnectOptions["credentials"] {
  return tls && { rootCertificate: tls.ca?.pem, certChain: tls.cert?.pem, privateKey: tls.key?.pem };
}

/** The metrics endpoint; at the default address only, a busy port is a warning (e.g. a second local server). */
async function startMetrics(config: Config, metrics: Registry, health: HealthStatus, log: Logger): Promise<MetricsEndpoint | undefined> {
  try {
    const endpoint = await serveMetrics(config.metricsListen!, metrics, health);
    log.info({ url: endpoint.url }, "metrics");
    return endpoint;
  } catch (err) {
    if (config.metricsListenGiven) throw err;
    log.warn({ err: (err as Error).message }, "no metrics endpoint: the default address is busy; set --metrics-listen to another address, or off");
    return undefined;
  }
}

export async function serve(config: Config): Promise<void> {
  // Before any request is decoded, for the whole process: invalid UTF-8 in a string field reaches
  // validation as lone surrogates, to be refused, not as U+FFFD (server/wire/utf8.ts). Here rather than at
  // module level, so that importing this module changes nothing global.
  installStrictUtf8();
  const log = createLogger(config.logLevel);
  let embedded: EmbeddedEtcd | undefined;
  let endpoints = config.etcdEndpoints;
  if (endpoints.length === 0) {
    const dataDir = resolve(config.dataDir, "etcd");
    try {
      embedded = await startEmbeddedEtcd({ dataDir, clientPort: config.embeddedEtcdPorts.client, peerPort: config.embeddedEtcdPorts.peer, quotaBackendBytes: config.etcdQuotaBytes });
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

  let tracing: Tracing | undefined;
  try {
    // Before the pipeline is built: it adds its tracing step only when tracing is on.
    if (config.otlp) {
      // Loaded only when on: the OpenTelemetry SDK and its exporter are about a fifth of the files a
      // server loads at start, and a start's CPU is mostly loading files.
      const { startTracing, tracesUrl } = await import("./tracing/setup.js");
      tracing = startTracing({
        endpoint: config.otlp.endpoint,
        scheduledDelayMs: config.otlp.delayMs,
        sampleRatio: config.otlp.sampleRatio,
        onError: (err, failures) => log.warn({ err: err.message, failures }, "spans not sent to the OTLP endpoint"),
      });
      log.info({ url: tracesUrl(config.otlp.endpoint), batchDelayMs: config.otlp.delayMs, sampleRatio: config.otlp.sampleRatio }, "tracing");
    }
    const authenticator = await Authenticator.create(config.authentication);
    const policy = config.policyFile !== undefined ? await PolicyFile.load(config.policyFile, log) : undefined;
    const access = new Access(authenticator, policy);
    const metrics = createMetricsRegistry();
    const etcd = connectEtcd({ endpoints, callTimeoutMs: config.etcdTimeoutMs, credentials: etcdCredentials(config.etcdTls) });
    const app = createApp({
      etcd,
      access,
      tokenSigningKey: config.tokenSigningKey,
      callerCaps: { ...config.callerCaps, streamMessagesPerSecond: config.maxStreamMessagesPerSecond, historyBytesPerSecond: config.historyBytesPerSecond },
      prefix: config.prefix,
      limits: {
        maxTtlSeconds: config.maxTtlSeconds,
        maxLockDelaySeconds: config.maxLockDelaySeconds,
        maxTxnOps: config.maxTxnOps,
        idempotencyTtlSeconds: config.idempotencyTtlSeconds,
        maxLeasesPerCaller: config.maxLeasesPerCaller,
        maxBytesPerResource: config.maxBytesPerResource,
        // Kept per principal: with authentication off, nobody is charged.
        maxStoreBytesPerCaller: config.authentication.mtls || config.authentication.jwt ? config.maxStoreBytesPerCaller : 0,
        maxBytesPerLease: config.maxBytesPerLease,
        preemptionIntervalMs: config.preemptionIntervalMs,
      },
      answers: config.answers,
      etcdLimits: { maxTxnOps: config.etcdMaxTxnOps, maxRequestBytes: config.etcdMaxRequestBytes },
      etcdTimeoutMs: config.etcdTimeoutMs,
      log,
      observeEtcd: etcdMetrics(metrics),
      compaction: config.compaction,
    });
    // What the domain does, as it does it: the lease and store metrics, and the ownership log (debug).
    leaseMetrics(metrics, app.events);
    storeMetrics(metrics, app.events);
    ownershipLog(log, app.events);
    // The audit trail (--audit-log): hears the domain and watches every call (docs/audit.md).
    const audit = config.auditLog !== undefined ? startAudit(config.auditLog, config.replica, metrics, log) : undefined;
    audit?.listen(app.events);
    const health = new HealthStatus([LeaseService.typeName, FencedStoreService.typeName]);
    healthMetrics(metrics, health);
    const calls = new InFlightCalls();

    const healthImpl = handlers(Health, healthService(health));
    // Paths whose requests are streams of messages, which no read limit binds (the transport's).
    const requestStreams = new Set<string>();
    const routes = (router: ConnectRouter) => {
      app.routes(router);
      router.service(Health, healthImpl);
      if (config.reflection) registerReflection(router, log);
      for (const h of router.handlers) {
        if (h.method.methodKind === "client_streaming" || h.method.methodKind === "bidi_streaming") requestStreams.add(h.requestPath);
      }
    };
    // Every call, whichever adapter brings it, runs through one pipeline (server/rpc/README.md).
    const pipeline = new CallPipeline({ observer: allOf([requestLog(log), rpcMetrics(metrics), ...(audit ? [audit.observer()] : [])]), calls,
      authenticator: authenticator.enabled ? authenticator : undefined,
      // Without authentication, a web page could drive the port by DNS rebinding: the Host must name the server.
      hosts: authenticator.enabled ? undefined : hostRule(config.listen.host, config.allowedHosts),
    });
    const viaConnect = connectAdapter({
      routes,
      observer: pipeline.observer,
      interceptors: pipeline.interceptors(),
      readMaxBytes: READ_MAX_BYTES,
      // A KeepAlive renewal's error carries its ErrorInfo in an Any: JSON names its type, from the registry.
      jsonOptions: { ...strictUtf8Json, registry: createRegistry(ErrorInfoSchema) },
      contextValues: credentialsOf,
    });
    // The short path pays: about 2.5x the writes per second at 64 writers (npm run bench -- --only put,
    // with FENCEKEEPER_UNARY_FAST_PATH=off for the comparison).
    const handler = !config.unaryFastPath ? viaConnect : unaryFastPath({ services: [...app.services, [Health, healthImpl]], pipeline, readMaxBytes: READ_MAX_BYTES }, viaConnect);

    const probe = probeEtcd(() => app.pingEtcd(), health, config.healthProbeIntervalMs, log);
    await probe.first;
    if (health.etcdUp) {
      try {
        await app.checkEtcdLimits();
      } catch (err) {
        if (err instanceof EtcdLimitsError) {
          probe.stop();
          throw err;
        }
        log.warn({ err: (err as Error).message }, "could not check what etcd accepts in one request");
      }
    } else {
      log.warn("etcd does not answer yet: what it accepts in one request (--etcd-max-txn-ops, --etcd-max-request-bytes) is not checked");
    }
    if (audit && health.etcdUp) await auditKeys(audit, authenticator, () => app.coordinator.tokenKeys(), "startup", log);
    const exporter = config.metricsListen && (await startMetrics(config, metrics, health, log));
    const transport = await listen({ ...config.listen, tls: config.tls, ...config.connections, requestStreams }, handler);
    const { address, port } = transport.address;
    const url = `${transport.scheme}://${address.includes(":") ? `[${address}]` : address}:${port}`;
    // The read-only console: its page, and its calls handed to the same handler (server/console/).
    let consolePort = 0;
    const consoleTransport =
      config.consoleListen &&
      (await listen({ ...config.consoleListen, ...config.connections, requestStreams }, consoleHandler(handler, config.consoleListen, config.allowedHosts)));
    if (consoleTransport) {
      consolePort = consoleTransport.address.port;
      const at = consoleTransport.address.address;
      log.info({ url: `http://${at.includes(":") ? `[${at}]` : at}:${consolePort}/` }, "console");
    }

    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) {
        // A second SIGTERM or SIGINT ends the process at once, with exit code 1, whatever the drain waits
        // for. Nothing on this path waits for the log (server/observability/logger.ts); process.exit still
        // runs the 'exit' handlers, which kill an embedded etcd.
        try {
          log.warn({ signal }, "second signal: stopping now");
        } finally {
          process.exit(1);
        }
      }
      stopping = true;
      log.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
      consoleTransport?.stopAccepting();
      await drain({ health, transport, calls, graceMs: config.shutdownGraceMs, settleMs: config.etcdTimeoutMs, log });
      consoleTransport?.destroy();
      probe.stop();
      policy?.close();
      app.close();
      await audit?.close(1000); // every decision made during the drain, written (a stuck disk gets a second)
      etcd.close();
      await exporter?.close();
      await tracing?.shutdown(2000);
      await embedded?.stop();
      log.info("stopped");
      await logWritten(1000); // a slow reader gets a second; a closed or stuck one costs nothing more
      process.exit(0);
    };
    process.on("SIGINT", () => void shutdown("SIGINT"));
    process.on("SIGTERM", () => void shutdown("SIGTERM"));
    // SIGHUP re-reads what may change without a restart: the policy, and the JWT verification keys (a bad
    // file keeps what is in force, with an error in the log); and the audit file is opened again (rotation).
    process.on("SIGHUP", () => {
      void policy?.reload("SIGHUP");
      audit?.reopen();
      if (config.authentication.jwt) {
        authenticator.reload().then(
          () => {
            log.info("JWT verification keys reloaded");
            if (audit) void auditKeys(audit, authenticator, () => app.coordinator.tokenKeys(), "SIGHUP", log);
            access.streams.reauthenticate().catch((err: Error) => log.error({ err: err.message }, "open streams not authenticated again"));
          },
          (err: Error) => log.error({ err: err.message }, "JWT verification keys not reloaded; the previous keys stay in force"),
        );
      } else if (audit) {
        void auditKeys(audit, authenticator, () => app.coordinator.tokenKeys(), "SIGHUP", log);
      }
    });
    policy?.watch();
    if (authenticator.enabled) {
      log.info({ authentication: authenticator.describe(), policy: policy ? config.policyFile : "none: every authenticated caller may do everything" }, "authentication");
    } else {
      log.warn(
        "no authentication: any caller that reaches the port may renew, release and write under any lease; set --tls-client-ca or --jwt-keys (docs/authentication.md)",
      );
    }
    // Said once the signals are handled: whoever waits for this line may stop the server at once.
    log.info({ url, etcd: endpoints, reflection: config.reflection, mtls: config.tls?.clientCa !== undefined, authentication: authenticator.enabled, serving: health.serving }, "serving");
  } catch (err) {
    await tracing?.shutdown(0);
    await embedded?.stop();
    throw err;
  }
}

// Run as a program (`npm start`, the image, `node server/main.ts`): the same command as `fencekeeper serve`.
const isMain = process.argv[1] && resolve(process.argv[1]).replace(/\.[jt]s$/, "") === resolve(import.meta.dirname, "main");
if (isMain) void serverCommand("fencekeeper-server", async () => serve).parseAsync();
