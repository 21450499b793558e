// The caller's trace, continued by the server: when the application has an active OpenTelemetry span,
// each call carries it as a W3C traceparent (and its tracestate); without one, nothing is added. A mesh
// or an interceptor that set traceparent already is not overridden. @opentelemetry/api is an optional
// peer dependency: an application that does not use OpenTelemetry has no span to send, and does not
// need the package.
import type { Interceptor } from "@connectrpc/connect";

type Api = typeof import("@opentelemetry/api");

let api: Api | null | undefined;
const loaded = import("@opentelemetry/api").then(
  (m) => (api = m),
  () => (api = null),
);

export const traceContext: Interceptor = (next) => async (req) => {
  if (api === undefined) await loaded;
  const span = api?.trace.getActiveSpan()?.spanContext();
  if (api && span && api.isSpanContextValid(span) && !req.header.has("traceparent")) {
    const sampled = (span.traceFlags & api.TraceFlags.SAMPLED) === api.TraceFlags.SAMPLED;
    req.header.set("traceparent", `00-${span.traceId}-${span.spanId}-${sampled ? "01" : "00"}`);
    const state = span.traceState?.serialize();
    if (state) req.header.set("tracestate", state);
  }
  return next(req);
};
