// The caller's trace, continued by the server: when the caller has an active OpenTelemetry span, each
// call carries it as a W3C traceparent (and its tracestate); without one, nothing is added. A mesh that
// sets traceparent itself is not overridden.
import { isSpanContextValid, trace, TraceFlags } from "@opentelemetry/api";
import type { Interceptor } from "@connectrpc/connect";

export const traceContext: Interceptor = (next) => (req) => {
  const span = trace.getActiveSpan()?.spanContext();
  if (span && isSpanContextValid(span) && !req.header.has("traceparent")) {
    const flags = (span.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? "01" : "00";
    req.header.set("traceparent", `00-${span.traceId}-${span.spanId}-${flags}`);
    const state = span.traceState?.serialize();
    if (state) req.header.set("tracestate", state);
  }
  return next(req);
};
