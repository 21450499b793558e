// Tracing, on when an OTLP endpoint is configured (--otlp-endpoint): spans go in batches to the endpoint
// over OTLP/HTTP with protobuf, the context of a call follows its work through AsyncLocalStorage, and the
// tracer is set for every site that makes spans (tracer.ts). docs/operations.md, "Tracing".
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { setGlobalErrorHandler } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, BasicTracerProvider as TracerProvider } from "@opentelemetry/sdk-trace-base";
import { setTracer } from "./tracer.js";

export interface TracingOptions {
  /** The collector's OTLP/HTTP address (http://collector:4318); /v1/traces is added unless the path ends with it. */
  endpoint: string;
  /** How long spans wait to go out together, in ms (OTEL_BSP_SCHEDULE_DELAY; default 5000). */
  scheduledDelayMs: number;
  /** The share of the traces the server starts that are recorded; a caller's sampled flag decides for its trace. */
  sampleRatio: number;
  /** Told when spans could not be sent (the collector is down): at most once a minute, with how many failures since. */
  onError(err: Error, failures: number): void;
}

export interface Tracing {
  /** Sends the spans still waiting, then stops; waits at most ms. */
  shutdown(ms: number): Promise<void>;
}

/** The URL spans are posted to, from the endpoint as configured. */
export function tracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (!u.pathname.endsWith("/v1/traces")) u.pathname = `${u.pathname.replace(/\/$/, "")}/v1/traces`;
  return u.toString();
}

export function startTracing(o: TracingOptions): Tracing {
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  let failures = 0;
  let told = -Infinity;
  setGlobalErrorHandler((err) => {
    failures++;
    if (performance.now() - told < 60_000) return;
    told = performance.now();
    o.onError(err instanceof Error ? err : new Error(String(err)), failures);
    failures = 0;
  });
  const exporter = new OTLPTraceExporter({ url: tracesUrl(o.endpoint) });
  const provider = new TracerProvider({
    // A request's resource is set on its span before it is validated: a long one is cut, not sent whole.
    spanLimits: { attributeValueLengthLimit: 1024 },
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(o.sampleRatio) }),
    resource: resourceFromAttributes({ "service.name": process.env.OTEL_SERVICE_NAME || "fencekeeper" }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: o.scheduledDelayMs })],
  });
  trace.setGlobalTracerProvider(provider);
  setTracer(provider.getTracer("fencekeeper"));
  return {
    async shutdown(ms) {
      setTracer(undefined);
      let timer: NodeJS.Timeout | undefined;
      // A collector that does not answer holds the shutdown for ms at most.
      await Promise.race([provider.shutdown().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
      clearTimeout(timer);
      contextManager.disable();
    },
  };
}
