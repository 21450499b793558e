// The tracer every span of the server comes from, undefined while tracing is off (the default): then each
// site below returns at its first test, and no span or context is made per call. setup.ts sets it
// when --otlp-endpoint is given.
import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from "@opentelemetry/api";

let current: Tracer | undefined;

/** The server's tracer; undefined when tracing is off. */
export function tracer(): Tracer | undefined {
  return current;
}

export function setTracer(t: Tracer | undefined): void {
  current = t;
}

/** Whether a span is being recorded in the active context: tracing is on, and a call is being traced. */
export function tracing(): boolean {
  return current !== undefined && trace.getActiveSpan()?.isRecording() === true;
}

/** The active context, to carry across a queue (the group commit); undefined when tracing is off. */
export function activeContext(): Context | undefined {
  return current && context.active();
}

/** Runs fn in ctx (when tracing is on and a context was kept). */
export function inContext<T>(ctx: Context | undefined, fn: () => T): T {
  return ctx ? context.with(ctx, fn) : fn();
}

/**
 * Runs fn in a span that is the active one's child, ended when fn settles (a failure marks it an error).
 * With tracing off, or outside a recorded span (a call not sampled, the server's own work), fn alone.
 */
export function inSpan<T>(name: string, attributes: Attributes, fn: () => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!current || !tracing()) return fn();
  return current.startActiveSpan(name, { kind, attributes }, async (span: Span) => {
    try {
      return await fn();
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The span active in ctx, if it records. */
export function spanOf(ctx: Context | undefined): Span | undefined {
  const span = ctx && trace.getSpan(ctx);
  return span?.isRecording() ? span : undefined;
}

/** Links the span of each context given to the span active now: one etcd request that served them all. */
export function linkToActive(contexts: (Context | undefined)[], attributes?: Attributes): void {
  if (!current) return;
  const target = trace.getActiveSpan()?.spanContext();
  if (!target) return;
  // Once per span: the writes of one call (a Batch) may ride one request together.
  const spans = new Set(contexts.map(spanOf));
  for (const span of spans) span?.addLink({ context: target, attributes });
}
