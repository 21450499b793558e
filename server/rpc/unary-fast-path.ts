// Unary calls on a short path. connect-node's general machinery (async-iterable pipelines, an
// AbortController and its DOMException per call, web Headers) cost about a millisecond of CPU per call
// on the machines this was measured on, several times what a call's own work costs; at thousands of
// writes per second that is where the time went. This path serves the unary methods of our services in
// all three protocols, with the protobuf binary format or JSON, with connect's own protocol pieces
// (timeouts, trailers, error JSON), and hands every other request to connect unchanged: streams, GET
// requests, compression other than gzip and br, gRPC-Web over text, and anything it does not recognise.
//
// It is an adapter: it speaks the wire (read the body, inflate and decode it, a malformed message being
// INVALID_ARGUMENT as it is the caller's; keep the deadline; write the answer) and hands the call to the
// pipeline (pipeline.ts), which runs it as it runs connect's, with a context whose signal is made only
// if the handler asks for it.
import type http from "node:http";
import type http2 from "node:http2";
import { promisify } from "node:util";
import { brotliDecompress, gunzip } from "node:zlib";
import { create, fromBinary, fromJson, toBinary, toJsonString, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type ContextValues } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { invalid } from "../errors/errors.js";
import type { CallContext } from "./call-context.js";
import type { CallPipeline, StoppableCall } from "./pipeline.js";
import { REQUEST_ID_HEADER, requestIdFrom } from "./request-context.js";
import { readTimedOut } from "./transport.js";
import { decodeUtf8Escaped } from "../wire/utf8.js";
import { checkJsonEnums } from "./json-enums.js";
import { sendable } from "./sendable-errors.js";
import { JSON_REGISTRY } from "../wire/json-registry.js";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;
type Handler = (req: Request, res: Response) => void;
type Impl = (req: never, ctx: CallContext) => Promise<unknown>;

/** How a request is framed, how its message is encoded, and how it is compressed. */
interface Protocol {
  framing: "grpc" | "grpc-web" | "connect";
  json: boolean;
  compression: "gzip" | "br" | undefined;
  /** The response's content type. */
  contentType: string;
}

interface Route {
  method: DescMethod;
  input: DescMessage;
  output: DescMessage;
  impl: Impl;
}

export interface FastPathOptions {
  /** The services, with the handlers connect is given for them too (pipeline.ts's handlers()). */
  services: [DescService, Record<string, unknown>][];
  /** What runs each call: watched, authenticated, tracked. */
  pipeline: CallPipeline;
  /** Requests larger than this are refused with RESOURCE_EXHAUSTED. */
  readMaxBytes: number;
}

const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** A handler that serves what it can of routes, and passes the rest to fallback. */
export function unaryFastPath(o: FastPathOptions, fallback: Handler): Handler {
  const routes = new Map<string, Route>();
  for (const [service, impl] of o.services) {
    for (const method of service.methods) {
      const fn = impl[method.localName];
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      routes.set(`/${service.typeName}/${method.name}`, { method, input: method.input, output: method.output, impl: fn as Impl });
    }
  }
  return (req, res) => {
    const route = req.method === "POST" ? routes.get(req.url ?? "") : undefined;
    const protocol = route && protocolOf(req);
    if (!route || !protocol) return fallback(req, res);
    void serve(o, route, protocol, req, res);
  };
}

/** The protocol of a request this path can serve, from its headers; undefined: connect's. */
function protocolOf(req: Request): Protocol | undefined {
  const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
  const h = req.headers;
  const grpc = (framing: "grpc" | "grpc-web", json: boolean, contentType: string): Protocol | undefined => {
    const compression = compressionOf(h["grpc-encoding"]);
    return compression === false ? undefined : { framing, json, compression, contentType };
  };
  const connect = (json: boolean): Protocol | undefined => {
    const compression = compressionOf(h["content-encoding"]);
    return compression === false ? undefined : { framing: "connect", json, compression, contentType: json ? "application/json" : "application/proto" };
  };
  switch (type) {
    case "application/grpc":
    case "application/grpc+proto":
      return req.httpVersionMajor === 2 ? grpc("grpc", false, type) : undefined;
    case "application/grpc+json":
      return req.httpVersionMajor === 2 ? grpc("grpc", true, type) : undefined;
    case "application/grpc-web":
    case "application/grpc-web+proto":
      return grpc("grpc-web", false, "application/grpc-web+proto");
    case "application/grpc-web+json":
      return grpc("grpc-web", true, "application/grpc-web+json");
    case "application/proto":
      return connect(false);
    case "application/json":
      return connect(true);
    default:
      return undefined;
  }
}

/** The compression this path reads; false: one it leaves to connect. */
function compressionOf(v: string | string[] | undefined): Protocol["compression"] | false {
  if (v === undefined || v === "identity") return undefined;
  return v === "gzip" || v === "br" ? v : false;
}


/** The context of one call: the signal is made the first time a handler asks for it. */
class Call implements StoppableCall {
  private controller?: AbortController;
  private stopped?: ConnectError;
  private onStop?: (err: ConnectError) => void;
  readonly values: ContextValues = createContextValues();
  /** Settles with the reason the call was stopped (the caller left, the deadline, the shutdown). */
  readonly stop: Promise<never>;

  constructor(private readonly deadline: number | undefined) {
    this.stop = new Promise<never>((_, reject) => (this.onStop = reject));
    this.stop.catch(() => undefined);
  }

  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    if (this.stopped && !this.controller.signal.aborted) this.controller.abort(this.stopped);
    return this.controller.signal;
  }

  timeoutMs(): number | undefined {
    return this.deadline === undefined ? undefined : this.deadline - Date.now();
  }

  abort(reason: ConnectError): void {
    if (this.stopped) return;
    this.stopped = reason;
    this.controller?.abort(reason);
    this.onStop!(reason);
  }

  get aborted(): ConnectError | undefined {
    return this.stopped;
  }
}

async function serve(o: FastPathOptions, route: Route, protocol: Protocol, req: Request, res: Response): Promise<void> {
  const requestId = requestIdFrom(header(req, REQUEST_ID_HEADER));
  let call: Call | undefined;
  let timer: NodeJS.Timeout | undefined;
  const onClose = () =>
    call?.abort(
      readTimedOut(req)
        ? new ConnectError("the request did not arrive whole within the server's read limit (--request-read-timeout)", Code.DeadlineExceeded)
        : new ConnectError("the caller went away", Code.Canceled),
    );
  res.once("close", onClose);
  const { answer, error } = await o.pipeline.serveUnary({
    method: route.method,
    requestId,
    authorization: header(req, "authorization") ?? undefined,
    header: (name) => header(req, name) ?? undefined,
    socket: req.socket,
    start: () => {
      const timeout =
        protocol.framing !== "connect"
          ? parseGrpcTimeout(header(req, "grpc-timeout"), MAX_TIMEOUT_MS)
          : parseConnectTimeout(header(req, "connect-timeout-ms"), MAX_TIMEOUT_MS);
      if (timeout.error) throw timeout.error;
      // The deadline counts from the call's arrival: a body still arriving when it passes ends the call.
      const c = (call = new Call(timeout.timeoutMs !== undefined ? Date.now() + timeout.timeoutMs : undefined));
      if (timeout.timeoutMs !== undefined) {
        timer = setTimeout(() => c.abort(new ConnectError("the call's deadline passed", Code.DeadlineExceeded)), timeout.timeoutMs);
      }
      if (gone(res)) onClose();
      return c;
    },
    read: async () => decode(route, protocol, await readBody(req, o.readMaxBytes), o.readMaxBytes),
    handler: route.impl,
  });
  clearTimeout(timer);
  res.removeListener("close", onClose);
  if (gone(res) || res.writableEnded) {
    // Nobody reads the rest of a body whose call has ended.
    if (!req.readableEnded) req.resume();
    return;
  }
  try {
    write(route, protocol, res, requestId, error && sendable(error), answer);
  } catch (err) {
    res.destroy(err as Error);
  }
}

/** The caller has gone: its stream or connection is closed. */
function gone(res: Response): boolean {
  return "stream" in res ? res.stream.destroyed || res.stream.closed : res.destroyed;
}

function header(req: Request, name: string): string | null {
  const v = req.headers[name];
  return v === undefined ? null : Array.isArray(v) ? v[0] : v;
}

function readBody(req: Request, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners("data");
        req.resume();
        reject(new ConnectError(`the request is larger than ${max} bytes`, Code.ResourceExhausted));
        return;
      }
      chunks.push(chunk);
    });
    // A stream reset, or a connection closed, before the body's end: the call's abort says why. Every
    // request closes, so the error is made only when it closes early: a ConnectError captures a stack,
    // which cost about 2 % of the server's CPU on a one-caller Put run (bench/put-cpu.ts --profile).
    const early = () => reject(new ConnectError("the request ended before its body did", Code.Canceled));
    req.once("end", () => {
      req.removeListener("close", early);
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    });
    req.once("error", reject);
    req.once("close", early);
  });
}


async function decode(route: Route, protocol: Protocol, body: Buffer, max: number): Promise<unknown> {
  const type = route.input.typeName;
  let bytes = body;
  if (protocol.framing !== "connect") {
    if (body.length < 5 || body.readUInt32BE(1) !== body.length - 5) {
      throw invalid(`the request body is not one gRPC message frame (${body.length} bytes); send one ${type}`);
    }
    const flags = body[0];
    if (flags & trailerFlag || flags > 1) throw invalid(`the request's message frame has flags ${flags}; send one ${type}`);
    bytes = body.subarray(5);
    if (flags === 1) {
      if (!protocol.compression) throw invalid("the request's message is marked compressed, but no grpc-encoding says how");
      bytes = await decompress(bytes, protocol.compression, max);
    }
  } else if (protocol.compression) {
    bytes = await decompress(bytes, protocol.compression, max);
  }
  if (!protocol.json) {
    try {
      return fromBinary(route.input, bytes);
    } catch (err) {
      throw invalid(`the request is not a valid ${type} in the protobuf binary format: ${(err as Error).message}`);
    }
  }
  let json: unknown;
  try {
    // Invalid UTF-8 stays visible (as lone surrogates), so that validation refuses it naming the field.
    json = JSON.parse(decodeUtf8Escaped(bytes));
  } catch (err) {
    throw invalid(`the request is not valid JSON: ${(err as Error).message}`);
  }
  checkJsonEnums(route.input, json);
  try {
    return fromJson(route.input, json as never, { ignoreUnknownFields: true });
  } catch (err) {
    throw invalid(`the request is not a valid ${type} in JSON: ${(err as Error).message}`);
  }
}

const inflate = { gzip: promisify(gunzip), br: promisify(brotliDecompress) };

/**
 * Inflates a request's message in zlib's thread pool, stopping at max bytes of output: a few KB can
 * inflate to gigabytes (a decompression bomb), which inflated whole, and on the event loop, would stop
 * every other call and take the process's memory. The same limit as connect's path (readMaxBytes).
 */
async function decompress(bytes: Buffer, how: "gzip" | "br", max: number): Promise<Buffer> {
  try {
    return await inflate[how](bytes, { maxOutputLength: max });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") {
      throw new ConnectError(`the request's message inflates to more than ${max} bytes (${how}); send a smaller one`, Code.ResourceExhausted);
    }
    throw invalid(`the request's ${how} encoding is broken: ${(err as Error).message}`);
  }
}

function write(route: Route, protocol: Protocol, res: Response, requestId: string, error: ConnectError | undefined, answer: unknown): void {
  // The answer is encoded before anything is written: one that cannot be (a bug) is still answered, as
  // INTERNAL, rather than with a closed connection.
  let body: Uint8Array | undefined;
  if (!error) {
    try {
      const message = create(route.output, answer as never);
      body = protocol.json ? Buffer.from(toJsonString(route.output, message, { registry: JSON_REGISTRY })) : toBinary(route.output, message);
    } catch (err) {
      console.error(`the answer of ${route.method.parent.typeName}/${route.method.name} could not be encoded`, err);
      error = new ConnectError("internal error; the server log has the details", Code.Internal);
    }
  }
  switch (protocol.framing) {
    case "grpc": {
      if (error) {
        // Trailers-only: one HEADERS frame that ends the stream.
        (res as http2.Http2ServerResponse).stream.respond(
          { ":status": 200, "content-type": protocol.contentType, [REQUEST_ID_HEADER]: requestId, ...trailerOf(error) },
          { endStream: true },
        );
        return;
      }
      // Trailers go through the response object, which sends its own when the stream asks for them.
      const r = res as http2.Http2ServerResponse;
      r.writeHead(200, { "content-type": protocol.contentType, [REQUEST_ID_HEADER]: requestId });
      r.addTrailers({ "grpc-status": "0" });
      r.end(envelope(0, body!));
      return;
    }
    case "grpc-web": {
      const trailer = error ? trailerOf(error) : { "grpc-status": "0" };
      const frames = [envelope(trailerFlag, trailerSerialize(new Headers(trailer)))];
      if (!error) frames.unshift(envelope(0, body!));
      res.writeHead(200, { "content-type": protocol.contentType, [REQUEST_ID_HEADER]: requestId });
      res.end(Buffer.concat(frames));
      return;
    }
    case "connect": {
      if (error) {
        const headers: Record<string, string> = { "content-type": "application/json", [REQUEST_ID_HEADER]: requestId };
        error.metadata.forEach((v, k) => (headers[k] = v));
        res.writeHead(codeToHttpStatus(error.code), headers);
        res.end(Buffer.from(errorToJsonBytes(error, {})));
        return;
      }
      res.writeHead(200, { "content-type": protocol.contentType, [REQUEST_ID_HEADER]: requestId });
      res.end(body!);
    }
  }
}

/** grpc-status, grpc-message and grpc-status-details-bin (with the error's details) as headers. */
function trailerOf(error: ConnectError): Record<string, string> {
  const out: Record<string, string> = {};
  setTrailerStatus(new Headers(), error).forEach((v, k) => (out[k] = v));
  return out;
}

function envelope(flags: number, data: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(5 + data.length);
  b[0] = flags;
  b.writeUInt32BE(data.length, 1);
  b.set(data, 5);
  return b;
}
