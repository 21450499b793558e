// A connect Transport whose unary calls go through @grpc/grpc-js, the gRPC library etcd3 and most Node
// services use, and whose streams (KeepAlive, Observe, ListResources) go through connect-node as before.
// The SDK keeps connect's typed clients, interceptors and errors; what changes is the cost of a call:
// connect-node spends about three times grpc-js's client CPU on a unary call (abort signals linked and
// fired per call, errors with stack traces made for every completion, async iterables around one
// message), measured by `npm run bench -- --only coalesce` (rows "SDK, coalescing off" and "grpc-js
// stubs"). The option `transport: "connect"` of FencekeeperClient keeps connect-node for every call.
//
// What a caller sees is what connect-node gives: a ConnectError with the status, message and details
// (grpc-status-details-bin) of the answer, Canceled with the signal's reason when the signal aborts,
// DeadlineExceeded at timeoutMs, Unavailable when the server cannot be reached (with ECONNREFUSED in its
// cause when the connection was refused, which calls.ts reads).
import * as grpc from "@grpc/grpc-js";
import {
  create,
  fromBinary,
  toBinary,
  type DescMessage,
  type DescMethodStreaming,
  type DescMethodUnary,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type ContextValues, type Interceptor, type Transport, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";

export interface GrpcJsTransportOptions {
  /** http://host:port or https://host:port. */
  baseUrl: string;
  interceptors: Interceptor[];
  tls?: { ca?: string | Buffer; cert?: string | Buffer; key?: string | Buffer };
  /** Carries the streaming calls. */
  streams: Transport;
}

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // As connect-node: no limit of its own on a message's size (the server bounds what it sends).
  "grpc.max_receive_message_length": -1,
  "grpc.max_send_message_length": -1,
  // The SDK decides what to repeat (calls.ts): no retries below it.
  "grpc.enable_retries": 0,
};

export function createGrpcJsTransport(o: GrpcJsTransportOptions): Transport & { close(): void } {
  const url = new URL(o.baseUrl);
  const secure = url.protocol === "https:";
  const credentials = secure
    ? grpc.credentials.createSsl(buffer(o.tls?.ca), buffer(o.tls?.key), buffer(o.tls?.cert))
    : grpc.credentials.createInsecure();
  let client: grpc.Client | undefined;
  const channel = () => (client ??= new grpc.Client(url.host, credentials, CHANNEL_OPTIONS));
  // A server that could not be reached: the next call opens a new channel at once rather than wait out
  // grpc-js's reconnection backoff, as connect-node's session manager does.
  const drop = () => {
    client?.close();
    client = undefined;
  };
  const base = o.baseUrl.replace(/\/$/, "");

  // signal: the caller's, if it gave one (req.signal is then the same; otherwise one that never aborts).
  const send = <I extends DescMessage, O extends DescMessage>(req: UnaryRequest<I, O>, timeoutMs: number | undefined, signal: AbortSignal | undefined): Promise<UnaryResponse<I, O>> =>
    new Promise((resolve, reject) => {
      const { method } = req;
      if (signal?.aborted) return reject(ConnectError.from(signal.reason, Code.Canceled));
      const metadata = new grpc.Metadata();
      req.header.forEach((value, key) => metadata.set(key, value));
      let header = new Headers();
      const options: grpc.CallOptions = timeoutMs !== undefined && timeoutMs > 0 ? { deadline: Date.now() + timeoutMs } : {};
      const call = channel().makeUnaryRequest(
        `/${method.parent.typeName}/${method.name}`,
        (m: MessageShape<I>) => Buffer.from(toBinary(method.input, m)),
        (bytes: Buffer) => fromBinary(method.output, bytes),
        req.message,
        metadata,
        options,
        (err, message) => {
          signal?.removeEventListener("abort", onAbort);
          if (signal?.aborted) return reject(ConnectError.from(signal.reason, Code.Canceled));
          if (err) {
            if (err.code === grpc.status.UNAVAILABLE) drop();
            return reject(errorOf(err));
          }
          resolve({ stream: false, service: req.service, method, header, message: message!, trailer: new Headers() });
        },
      );
      call.on("metadata", (m: grpc.Metadata) => (header = headersOf(m)));
      const onAbort = () => call.cancel();
      signal?.addEventListener("abort", onAbort, { once: true });
    });

  return {
    async unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: MessageInitShape<I>,
      contextValues?: ContextValues,
    ): Promise<UnaryResponse<I, O>> {
      const req: UnaryRequest<I, O> = {
        stream: false,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: `${base}/${method.parent.typeName}/${method.name}`,
        signal: signal ?? NEVER,
        header: new Headers(header),
        contextValues: contextValues ?? createContextValues(),
        message: create(method.input, input),
      };
      const next = (r: UnaryRequest | unknown) => send(r as UnaryRequest<I, O>, timeoutMs, signal);
      // Interceptors wrap the call as connect's transports apply them: the first given is the outermost.
      const run = o.interceptors.reduceRight((n, i) => i(n as never) as typeof n, next as (r: unknown) => Promise<unknown>);
      return (await run(req)) as UnaryResponse<I, O>;
    },
    stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      signal: AbortSignal | undefined,
      timeoutMs: number | undefined,
      header: HeadersInit | undefined,
      input: AsyncIterable<MessageInitShape<I>>,
      contextValues?: ContextValues,
    ) {
      return o.streams.stream(method, signal, timeoutMs, header, input, contextValues);
    },
    close: drop,
  };
}

const NEVER = new AbortController().signal;

function buffer(v: string | Buffer | undefined): Buffer | null {
  return v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v);
}

/** grpc-js metadata as the Headers connect gives: binary values in base64, as on the wire. */
function headersOf(m: grpc.Metadata): Headers {
  const h = new Headers();
  for (const [key, values] of Object.entries(m.getMap())) {
    for (const v of [values].flat()) {
      try {
        h.append(key, Buffer.isBuffer(v) ? v.toString("base64") : String(v));
      } catch {
        // A value Headers cannot hold (not Latin-1): left out, as an HTTP/2 client would refuse it.
      }
    }
  }
  return h;
}

/** A grpc-js error as connect-node would report the same answer: status, message, details. */
function errorOf(err: grpc.ServiceError): ConnectError {
  const trailer = headersOf(err.metadata ?? new grpc.Metadata());
  trailer.set("grpc-status", String(err.code));
  // With grpc-status-details-bin, the status message and details as the server encoded them.
  const found = findTrailerError(trailer);
  if (err.code === grpc.status.UNAVAILABLE && !found?.details.length) {
    if (/ECONNREFUSED/.test(err.details)) {
      // calls.ts tells a refused connection (the server never saw the call) by its errno.
      return new ConnectError(err.details, Code.Unavailable, trailer, undefined, errno(err.details, "ECONNREFUSED"));
    }
    if (!/No connection established/.test(err.details)) {
      // The connection broke with the call on it: connect-node's Aborted with the socket's errno, which
      // error-mapping.ts reports as a call that may or may not have been applied.
      return new ConnectError(err.details, Code.Aborted, trailer, undefined, errno(err.details, "ECONNRESET"));
    }
  }
  const e = new ConnectError(found?.rawMessage || percentDecoded(err.details), err.code as number as Code, trailer);
  if (found) e.details.push(...found.details);
  return e;
}

/** grpc-message is percent-encoded on the wire (gRPC's HTTP/2 protocol), and grpc-js leaves it so. */
function percentDecoded(message: string): string {
  try {
    return decodeURIComponent(message);
  } catch {
    return message;
  }
}

function errno(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}
