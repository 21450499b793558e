// The pipeline's tracing (pipeline.ts): the server span of one call, opened for both adapters when
// tracing is on (server/tracing/). It continues the caller's W3C traceparent (and tracestate), is named
// by the gRPC method, and is active while the handler runs, so that the spans of the call's work
// (waiting in line, etcd requests) are its children. It carries rpc.system, rpc.service, rpc.method, the resource the request names, and the
// outcome: the gRPC status code and the ErrorInfo reason.
import type { DescMethod } from "@bufbuild/protobuf";
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { tracer } from "../tracing/tracer.js";

const w3c = new W3CTraceContextPropagator();

type Header = (name: string) => string | undefined;
const getter: TextMapGetter<Header> = {
  keys: () => ["traceparent", "tracestate"],
  get: (header, key) => header(key),
};

/** Codes that say the server failed, not the caller (OpenTelemetry's gRPC conventions for server spans). */
const SERVER_FAULTS = new Set([Code.Unknown, Code.DeadlineExceeded, Code.Unimplemented, Code.Internal, Code.Unavailable, Code.DataLoss]);

export class CallSpan {
  private ended = false;

  private constructor(
    private readonly span: Span,
    private readonly ctx: Context,
  ) {}

  /** The call's span, or undefined when tracing is off. header reads one of the request's headers. */
  static start(method: DescMethod, header: Header): CallSpan | undefined {
    const t = tracer();
    if (!t) return undefined;
    const parent = w3c.extract(ROOT_CONTEXT, header, getter);
    const service = method.parent.typeName;
    const span = t.startSpan(
      `${service}/${method.name}`,
      { kind: SpanKind.SERVER, attributes: { "rpc.system": "grpc", "rpc.service": service, "rpc.method": method.name } },
      parent,
    );
    return new CallSpan(span, trace.setSpan(parent, span));
  }

  /** Runs fn with this span active. */
  run<T>(fn: () => T): T {
    return context.with(this.ctx, fn);
  }

  /** The resource the request names, if it names one (a Release's is its token's). */
  request(message: unknown): void {
    const m = message as { resource?: unknown; token?: { resource?: unknown } } | undefined;
    const resource = typeof m?.resource === "string" ? m.resource : typeof m?.token?.resource === "string" ? m.token.resource : undefined;
    if (resource) this.span.setAttribute("fencekeeper.resource", resource);
  }

  /** Ends the span with the call's outcome (error undefined: OK); once. */
  end(error: ConnectError | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.span.setAttribute("rpc.grpc.status_code", error?.code ?? 0);
    if (error) {
      const reason = error.findDetails(ErrorInfoSchema)[0]?.reason;
      if (reason) this.span.setAttribute("fencekeeper.error.reason", reason);
      if (SERVER_FAULTS.has(error.code)) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error.rawMessage });
    }
    this.span.end();
  }

  /** A stream's messages, the span ended when the stream ends, fails or is closed early. */
  endWith<T>(source: AsyncIterable<T>): AsyncIterable<T> {
    // Not a generator: a generator's return() waits for a pending next(), and a stream may wait for ever.
    return {
      [Symbol.asyncIterator]: () => {
        const it = this.run(() => source[Symbol.asyncIterator]());
        return {
          next: async () => {
            try {
              const r = await this.run(() => it.next());
              if (r.done) this.end(undefined);
              return r;
            } catch (err) {
              this.end(ConnectError.from(err));
              throw err;
            }
          },
          return: async (value?: unknown) => {
            this.end(new ConnectError("the stream was closed before its end", Code.Canceled));
            return (await it.return?.(value)) ?? { done: true, value: value as T };
          },
        };
      },
    };
  }
}

/**
 * The tracing step for connect: the call's span, active while its handler runs. Outcome as thrown by
 * the steps inside it: the handlers' mapped errors, the caller's faults, authentication's refusals.
 */
export const tracingInterceptor: Interceptor = (next) => async (req) => {
  const span = CallSpan.start(req.method, (name) => req.header.get(name) ?? undefined);
  if (!span) return next(req);
  if (!req.stream) span.request(req.message);
  try {
    const res = await span.run(() => next(req));
    if (!res.stream) {
      span.end(undefined);
      return res;
    }
    return { ...res, message: span.endWith(res.message) };
  } catch (err) {
    span.end(ConnectError.from(err));
    throw err;
  }
};
