// Requests as other clients send them, byte for byte: Connect JSON and gRPC-Web over plain HTTP/1.1
// (fetch), raw protobuf bytes over gRPC with @grpc/grpc-js, and etcd's own metrics. For tests that must
// send an exact input no generated client would produce.
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ErrorInfoSchema, type ErrorInfo } from "../../gen/ts/google/rpc/error_details_pb.js";

/** A status as every protocol can give it: the gRPC code, its message, and the ErrorInfo details. */
export interface WireStatus {
  code: Code | 0;
  message: string;
  infos: ErrorInfo[];
  /** The answer's JSON body (Connect JSON, on success). */
  body?: unknown;
}

const CONNECT_CODES: Record<string, Code> = Object.fromEntries(
  Object.entries(Code)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => [k.replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase()), v as Code]),
);

/** POST a Connect unary request with a JSON body (any JSON at all) over HTTP/1.1. */
export function connectJson(baseUrl: string, path: string, body: unknown): Promise<WireStatus> {
  return connectUnary(baseUrl, path, typeof body === "string" ? body : JSON.stringify(body), { "content-type": "application/json" });
}

/** POST a Connect unary request with the body and headers given, byte for byte, over HTTP/1.1. */
export async function connectUnary(baseUrl: string, path: string, body: string | Uint8Array, headers: Record<string, string>): Promise<WireStatus> {
  const res = await fetch(baseUrl + path, {
    method: "POST",
    headers: { "connect-protocol-version": "1", ...headers },
    body: typeof body === "string" ? body : Buffer.from(body),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  if (res.status === 200) {
    const json = /json/.test(res.headers.get("content-type") ?? "") ? JSON.parse(bytes.toString("utf8")) : undefined;
    return { code: 0, message: "", infos: [], body: json };
  }
  let json: any;
  try {
    json = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw new Error(`HTTP ${res.status} with a body that is not JSON: ${bytes.toString().slice(0, 200)}`);
  }
  const code = CONNECT_CODES[json.code];
  if (code === undefined) throw new Error(`HTTP ${res.status} with an unknown Connect code: ${bytes.toString().slice(0, 200)}`);
  const infos = ((json.details ?? []) as { type: string; value: string }[])
    .filter((d) => d.type === "google.rpc.ErrorInfo")
    .map((d) => fromBinary(ErrorInfoSchema, Buffer.from(d.value, "base64")));
  return { code, message: json.message ?? "", infos };
}

/**
 * POST a gRPC-Web call over HTTP/1.1 whose one message frame holds `message` as is (for a server stream
 * too: its messages are skipped, its status is what counts).
 */
export async function grpcWeb(baseUrl: string, path: string, message: Uint8Array, contentType = "application/grpc-web+proto", headers: Record<string, string> = {}): Promise<WireStatus> {
  const res = await fetch(baseUrl + path, {
    method: "POST",
    headers: { "content-type": contentType, "x-grpc-web": "1", ...headers },
    body: frame(message),
  });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`gRPC-Web answered HTTP ${res.status}: ${body.toString().slice(0, 200)}`);
  // The status is in the headers (trailers-only) or in the trailer frame (flag 0x80) of the body.
  const fields = new Map<string, string>();
  res.headers.forEach((v, k) => fields.set(k, v));
  for (let at = 0; at + 5 <= body.length; ) {
    const flags = body[at];
    const length = body.readUInt32BE(at + 1);
    if (flags & 0x80) {
      for (const line of body.subarray(at + 5, at + 5 + length).toString("utf8").split("\r\n")) {
        const i = line.indexOf(":");
        if (i > 0) fields.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
      }
    }
    at += 5 + length;
  }
  const status = fields.get("grpc-status");
  if (status === undefined) throw new Error(`gRPC-Web answer without grpc-status (${body.length} bytes)`);
  return { code: Number(status) as Code, message: decodeURIComponent(fields.get("grpc-message") ?? ""), infos: [] };
}

/** One gRPC message frame, uncompressed. */
export function frame(message: Uint8Array) {
  const f = Buffer.alloc(5 + message.length);
  f.writeUInt32BE(message.length, 1);
  f.set(message, 5);
  return f;
}

/** One gRPC call over HTTP/2 with the content type given (e.g. application/grpc+json) and one message frame. */
export function grpcH2(baseUrl: string, path: string, message: Uint8Array, contentType: string): Promise<WireStatus> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, "content-type": contentType, te: "trailers" });
    const fields = new Map<string, string>();
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") fields.set(k, v);
    };
    req.on("response", take);
    req.on("trailers", take);
    req.on("error", reject);
    req.resume();
    req.on("close", () => {
      session.close();
      const status = fields.get("grpc-status");
      if (status === undefined) return reject(new Error(`gRPC answer without grpc-status (HTTP ${fields.get(":status")})`));
      resolve({ code: Number(status) as Code, message: decodeURIComponent(fields.get("grpc-message") ?? ""), infos: [] });
    });
    req.end(frame(message));
  });
}

const identity = (b: Buffer) => b;

/** A gRPC client for raw bytes: messages are sent and received unserialized. */
export function rawGrpcClient(baseUrl: string): grpc.Client {
  return new grpc.Client(baseUrl.replace(/^http:\/\//, ""), grpc.credentials.createInsecure());
}

/** One server-streaming gRPC call whose request message is `body`, byte for byte: how it ended. */
export function rawGrpcServerStream(client: grpc.Client, path: string, body: Uint8Array): Promise<WireStatus> {
  return new Promise((resolve) => {
    const call = client.makeServerStreamRequest(path, identity, identity, Buffer.from(body));
    call.on("data", () => undefined);
    call.on("error", (err: grpc.ServiceError) => resolve({ code: err.code as number as Code, message: err.details, infos: [] }));
    call.on("end", () => resolve({ code: 0, message: "", infos: [] }));
  });
}

/** One bidirectional gRPC call that sends the messages given, byte for byte, then half-closes: how it ended. */
export function rawGrpcBidi(client: grpc.Client, path: string, bodies: Uint8Array[]): Promise<WireStatus> {
  return new Promise((resolve) => {
    const call = client.makeBidiStreamRequest(path, identity, identity);
    call.on("data", () => undefined);
    call.on("error", (err: grpc.ServiceError) => resolve({ code: err.code as number as Code, message: err.details, infos: [] }));
    call.on("end", () => resolve({ code: 0, message: "", infos: [] }));
    for (const b of bodies) call.write(Buffer.from(b));
    call.end();
  });
}

/** One unary gRPC call whose request message is `body`, byte for byte. */
export function rawGrpcUnary(client: grpc.Client, path: string, body: Uint8Array): Promise<WireStatus> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, Buffer.from(body), (err: grpc.ServiceError | null) =>
      resolve(err ? { code: err.code as number as Code, message: err.details, infos: [] } : { code: 0, message: "", infos: [] }),
    );
  });
}

/** etcd_debugging_mvcc_watcher_total: how many watchers etcd has now, from its own metrics. */
export async function etcdWatchers(etcdEndpoint: string): Promise<number> {
  const text = await (await fetch(`${etcdEndpoint}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("etcd_debugging_mvcc_watcher_total "));
  if (!line) throw new Error("etcd's /metrics has no etcd_debugging_mvcc_watcher_total");
  return Number(line.split(" ")[1]);
}
