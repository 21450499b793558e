// connect-node's request handler (the few lines of its connectNodeAdapter), with one addition: a unary
// call that connect refuses before its interceptors run is told to the call observers (request log,
// metrics), which would otherwise never hear of it. connect reads, inflates and parses a unary request's
// one message, and checks its timeout and compression headers, before it calls the interceptors; so a
// body too large, unreadable, too slow to arrive, or a bad header, ends the call unseen. Its status is
// read back from the answer as the client gets it (gRPC trailers, the gRPC-Web trailer frame, the
// Connect error JSON).
import type http from "node:http";
import type http2 from "node:http2";
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type ConnectRouterOptions, type ContextValues } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { createAsyncIterable, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeFromHttpStatus, codeToHttpStatus, errorFromJsonBytes, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { findTrailerError, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerParse, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { CallSpan } from "./tracing.js";
import { OBSERVED } from "./in-flight.js";
import type { CallObserver } from "./call-observer.js";
import { REQUEST_ID_HEADER, requestIdFrom } from "./request-context.js";
import { readTimedOut } from "./transport.js";
import { JSON_REGISTRY } from "../wire/json-registry.js";
import { wholeEnvelopes } from "../wire/whole-envelopes.js";

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

export interface ConnectAdapterOptions extends ConnectRouterOptions {
  routes(router: ConnectRouter): void;
  contextValues(req: Request): ContextValues;
  /** Told of the unary calls refused before the interceptors (which tell it of all the others). */
  observer: CallObserver;
}

export function connectAdapter(o: ConnectAdapterOptions): (req: Request, res: Response) => void {
  const router = createConnectRouter({ acceptCompression: [compressionGzip, compressionBrotli], jsonOptions: { registry: JSON_REGISTRY }, ...o });
  o.routes(router);
  const paths = new Map(router.handlers.map((h) => [h.requestPath, h]));
  return (req, res) => {
    const handler = paths.get((req.url ?? "").split("?", 2)[0]);
    if (!handler) {
      res.writeHead(404);
      res.end();
      return;
    }
    const values = o.contextValues(req);
    const unary = handler.method.methodKind === "unary";
    const nodeReq = universalRequestFromNodeRequest(req as never, res as never, undefined, values);
    // A unary body is read whole and its one frame checked by connect; a stream's is read as it comes.
    const uReq = unary ? nodeReq : { ...nodeReq, body: wholeEnvelopes(nodeReq.body as AsyncIterable<Uint8Array>) };
    let answer: UniversalServerResponse | undefined;
    const body: Uint8Array[] = [];
    if (unary) {
      // connect-node's writing of the answer settles only on an event a response never emits: the
      // response's own close says when the answer is out, or the caller gone.
      res.once("close", () => {
        if (values.get(OBSERVED)) return;
        const requestId = requestIdFrom(header(req, REQUEST_ID_HEADER));
        const error = refusal(req, answer, body);
        o.observer({ method: handler.method, requestId })?.end(error);
        // Traced too (tracing on), as a span that starts and ends with the refusal.
        CallSpan.start(handler.method, (name) => header(req, name) ?? undefined)?.end(error);
      });
    }
    handler(uReq)
      .then(async (uRes) => {
        // A unary call the interceptors did not see was refused: its answer is a status, small, kept.
        if (unary && !values.get(OBSERVED)) {
          for await (const chunk of uRes.body ?? []) body.push(chunk);
          uRes = restated(uRes, body);
        }
        answer = uRes;
        return universalResponseToNodeResponse(uRes, res as never);
      })
      .catch((reason) => {
        if (ConnectError.from(reason).code === Code.Aborted) return;
        console.error(`handler for rpc ${handler.method.name} of ${handler.service.typeName} failed`, reason);
      });
  };
}

/**
 * A message that cannot be parsed is the caller's fault, INVALID_ARGUMENT; connect answers a unary one
 * INTERNAL ("parse binary: ..."), which tells the caller the server failed. (Streams: caller-faults.ts.)
 */
function callerFault(err: ConnectError | undefined): ConnectError | undefined {
  if (err?.code !== Code.Internal || !/^parse (binary|json)/.test(err.rawMessage)) return undefined;
  return new ConnectError(`the request's message cannot be read: ${err.rawMessage}`, Code.InvalidArgument);
}

/** The refused call's answer, with a caller's fault stated as one; body holds its bytes, and is updated. */
function restated(uRes: UniversalServerResponse, body: Uint8Array[]): UniversalServerResponse {
  const type = uRes.header?.get("content-type") ?? "";
  const bytes = Buffer.concat(body);
  const out = (b: Uint8Array, status = uRes.status): UniversalServerResponse => {
    body.splice(0, body.length, b);
    if (uRes.header?.has("content-length")) uRes.header.set("content-length", String(b.length));
    return { ...uRes, status, body: createAsyncIterable([b]) };
  };
  if (type.startsWith("application/grpc-web")) {
    const at = trailerFrameAt(bytes);
    const fault = at !== undefined ? callerFault(findTrailerError(trailerParse(bytes.subarray(at + 5)))) : undefined;
    if (!fault) return out(bytes);
    const trailer = trailerSerialize(setTrailerStatus(new Headers(), fault));
    const frame = Buffer.alloc(5 + trailer.length);
    frame[0] = trailerFlag;
    frame.writeUInt32BE(trailer.length, 1);
    frame.set(trailer, 5);
    return out(Buffer.concat([bytes.subarray(0, at), frame]));
  }
  if (type.startsWith("application/grpc")) {
    for (const h of [uRes.trailer, uRes.header]) {
      const fault = h && callerFault(findTrailerError(h));
      if (fault) setTrailerStatus(h, fault);
    }
    return out(bytes);
  }
  if (uRes.status !== codeToHttpStatus(Code.Internal)) return out(bytes);
  let fault: ConnectError | undefined;
  try {
    fault = callerFault(errorFromJsonBytes(bytes, undefined, new ConnectError("", Code.Internal)));
  } catch {
    fault = undefined;
  }
  return fault ? out(errorToJsonBytes(fault, {}), codeToHttpStatus(fault.code)) : out(bytes);
}

/** Where the gRPC-Web trailer frame starts in an answer's bytes. */
function trailerFrameAt(bytes: Buffer): number | undefined {
  for (let at = 0; at + 5 <= bytes.length; at += 5 + bytes.readUInt32BE(at + 1)) if (bytes[at] & trailerFlag) return at;
  return undefined;
}

/** Why a unary call the interceptors never saw ended: the status its answer carries. */
function refusal(req: Request, answer: UniversalServerResponse | undefined, body: Uint8Array[]): ConnectError {
  if (readTimedOut(req)) return new ConnectError("the request did not arrive whole within the server's read limit (--request-read-timeout)", Code.DeadlineExceeded);
  if (!answer) return new ConnectError("the caller went away", Code.Canceled);
  const type = answer.header?.get("content-type") ?? "";
  const bytes = Buffer.concat(body);
  const fallback = new ConnectError(`answered HTTP ${answer.status}`, answer.status === 200 ? Code.Unknown : codeFromHttpStatus(answer.status));
  if (type.startsWith("application/grpc-web")) {
    const at = trailerFrameAt(bytes);
    return (at !== undefined ? findTrailerError(trailerParse(bytes.subarray(at + 5))) : findTrailerError(answer.header!)) ?? fallback;
  }
  if (type.startsWith("application/grpc")) {
    return (answer.trailer && findTrailerError(answer.trailer)) ?? findTrailerError(answer.header!) ?? fallback;
  }
  if (answer.status === 200) return fallback;
  try {
    return errorFromJsonBytes(bytes, undefined, fallback);
  } catch {
    return fallback;
  }
}

function header(req: Request, name: string): string | null {
  const v = req.headers[name];
  return v === undefined ? null : Array.isArray(v) ? v[0] : v;
}
