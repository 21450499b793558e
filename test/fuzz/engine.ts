// Sends a case over the real wire and reports how the server answered, byte for byte, with nothing in
// between that could tidy up either side: gRPC and gRPC with JSON over HTTP/2 (node:http2, whose frames
// are written here: length prefixes that lie, a compressed flag without grpc-encoding, broken gzip,
// trailing garbage, several messages on a unary call, early cancels), gRPC-Web over HTTP/1.1, and
// Connect (unary JSON and binary, and server streams) over HTTP/1.1.
import http from "node:http";
import http2 from "node:http2";
import type net from "node:net";
import { gzipSync } from "node:zlib";
import { create, fromBinary, fromJson, toBinary, toJsonString, type DescMessage } from "@bufbuild/protobuf";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { Health } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { ServerReflection } from "../../gen/ts-grpc/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionAlpha } from "../../gen/ts-grpc/grpc/reflection/v1alpha/reflection_pb.js";
import { METHODS, type Ending, type FrameMutation, type FuzzCase, type Method, type Wire } from "./generators.js";

/** How long any call may take to be answered, beyond its own deadline. */
export const ANSWER_BOUND_MS = 10_000;
/** The longest a client waits for the first answer of a stream it means to cancel after it. */
const CANCEL_AFTER_FIRST_MS = 3000;

export const SCHEMAS: Record<Method, { input: DescMessage; output: DescMessage }> = {
  Acquire: LeaseService.method.acquire,
  Renew: LeaseService.method.renew,
  Release: LeaseService.method.release,
  Describe: LeaseService.method.describe,
  OpenSession: LeaseService.method.openSession,
  CloseSession: LeaseService.method.closeSession,
  ListTokenKeys: LeaseService.method.listTokenKeys,
  KeepAlive: LeaseService.method.keepAlive,
  Observe: LeaseService.method.observe,
  Put: FencedStoreService.method.put,
  Get: FencedStoreService.method.get,
  Delete: FencedStoreService.method.delete,
  Txn: FencedStoreService.method.txn,
  Range: FencedStoreService.method.range,
  GetFence: FencedStoreService.method.getFence,
  Batch: FencedStoreService.method.batch,
  ListResources: LeaseService.method.listResources,
  LiftLockDelay: LeaseService.method.liftLockDelay,
  Proclaim: LeaseService.method.proclaim,
  LeaseBatch: LeaseService.method.leaseBatch,
  AcquireAll: LeaseService.method.acquireAll,
  HealthCheck: Health.method.check,
  HealthList: Health.method.list,
  HealthWatch: Health.method.watch,
  Reflection: ServerReflection.method.serverReflectionInfo,
  ReflectionAlpha: ServerReflectionAlpha.method.serverReflectionInfo,
};

/** How a call ended, as the client saw it. */
export interface Answer {
  /** The gRPC status code; undefined when none came. */
  code?: number;
  /** grpc-message as it came on the wire (percent-encoded), or the Connect error's message. */
  rawMessage?: string;
  message?: string;
  /** What is wrong with the status itself (a grpc-message that is not percent-encoded UTF-8, a body that is not JSON...). */
  malformed?: string;
  /** Answer messages, undecoded (protobuf binary or JSON text). */
  messages: Buffer[];
  json: boolean;
  /** The HTTP/2 stream was reset without a status (its RST_STREAM code). */
  reset?: number;
  /** HTTP status, when it says more than the gRPC status (an HTTP error without grpc-status). */
  httpStatus?: number;
  /** The client cancelled before a status came: nothing is expected then. */
  cancelled: boolean;
  /** No status within the bound. */
  unanswered: boolean;
  /** Bytes of the request the transport took (flushed to the socket), of how many: where a call stalled. */
  sent?: { bytes: number; of: number };
  /** The connection failed before a status came (e.g. the server destroyed an HTTP/1.1 socket). */
  connectionFailed?: string;
  /** Sent again on a new connection: the kept-alive one it first went out on had been closed by the server as idle. */
  resentAfterReset?: boolean;
  ms: number;
}

/** What is sent: the message bodies, encoded and mutated, and whether the JSON mutation made them unreadable. */
export interface Encoded {
  bodies: Buffer<ArrayBufferLike>[];
  /** The JSON mutation applied makes the first message unreadable for certain. */
  jsonBroken: boolean;
}

const BAD_UTF8_BYTES = [Buffer.from([0xff, 0x80, 0x80]), Buffer.from([0xc0, 0x80, 0x80]), Buffer.from([0xed, 0xa0, 0x80])];
const STAND_IN = Buffer.from([0xee, 0x80, 0x80]);

/** Swaps every stand-in for bytes that are not UTF-8 (the same length, so lengths stay right). */
function swapBadUtf8(b: Buffer, serial: number): Buffer {
  let at = b.indexOf(STAND_IN);
  if (at < 0) return b;
  const out = Buffer.from(b);
  while (at >= 0) {
    BAD_UTF8_BYTES[serial % BAD_UTF8_BYTES.length].copy(out, at);
    at = out.indexOf(STAND_IN, at + 3);
  }
  return out;
}

const isJson = (w: Wire) => w.endsWith("json");

/** Encodes the messages of a case (already materialized) as its wire wants, then mutates the bytes. */
export function encode(c: FuzzCase, messages: unknown[], serial: number): Encoded {
  const schema = SCHEMAS[c.method].input;
  let jsonBroken = false;
  const bodies = messages.map((m, i) => {
    const msg = create(schema, m as never);
    let body: Buffer;
    if (isJson(c.wire)) {
      let text = toJsonString(schema, msg);
      if (i === 0 && c.json !== "none") ({ text, broken: jsonBroken } = mutateJson(c.json, text));
      body = Buffer.from(text);
      if (i === 0 && c.json === "bad-byte-prefix") body = Buffer.concat([Buffer.from([0xa8]), body]);
    } else {
      body = Buffer.from(toBinary(schema, msg));
    }
    body = swapBadUtf8(body, serial);
    return i === 0 && c.bytes ? mutateBytes(c.bytes, body) : body;
  });
  return { bodies, jsonBroken };
}

function mutateJson(how: FuzzCase["json"], text: string): { text: string; broken: boolean } {
  const obj = JSON.parse(text) as Record<string, unknown>;
  const keys = Object.keys(obj);
  switch (how) {
    case "unknown-field":
      return { text: JSON.stringify({ ...obj, fuzzUnknownField: [1, { a: null }] }), broken: false };
    case "wrong-type":
      if (keys.length === 0) return { text: "[]", broken: true };
      return { text: JSON.stringify({ ...obj, [keys[0]]: [1] }), broken: !Array.isArray(obj[keys[0]]) };
    case "lone-surrogate-escape": {
      const k = keys.find((x) => typeof obj[x] === "string");
      if (k === undefined) return { text: JSON.stringify({ ...obj, resource: "@@LS@@" }).replace("@@LS@@", "\\ud800"), broken: false };
      return { text: JSON.stringify({ ...obj, [k]: "@@LS@@" }).replace("@@LS@@", "a\\ud800"), broken: true };
    }
    case "deep-nesting":
      return { text: "[".repeat(3000) + "]".repeat(3000), broken: true };
    case "not-json":
      return { text: text.slice(0, Math.max(1, text.length >> 1)), broken: text.length > 2 };
    case "bad-byte-prefix":
      return { text, broken: true };
    case "null":
      return { text: "null", broken: false };
    case "none":
      return { text, broken: false };
  }
}

function mutateBytes(m: NonNullable<FuzzCase["bytes"]>, b: Buffer): Buffer<ArrayBufferLike> {
  const at = Math.floor((m.kind === "replace" || m.kind === "prefix" ? 0 : m.at) * (b.length + 1));
  switch (m.kind) {
    case "flip": {
      if (b.length === 0) return Buffer.from([m.xor]);
      const out = Buffer.from(b);
      out[Math.min(at, b.length - 1)] ^= m.xor;
      return out;
    }
    case "truncate":
      return b.subarray(0, Math.min(at, Math.max(0, b.length - 1)));
    case "insert":
      return Buffer.concat([b.subarray(0, at), Buffer.from(m.bytes), b.subarray(at)]);
    case "replace":
      return Buffer.from(m.bytes);
    case "prefix":
      return Buffer.concat([Buffer.from(m.bytes), b]);
  }
}

/** The framed body of a gRPC, gRPC-Web or Connect-stream call, and the headers its frame mutation needs. */
function framed(bodies: Buffer[], mutation: FrameMutation, encodingHeader: string): { chunks: Buffer[]; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  const frame = (flags: number, data: Buffer, length = data.length) => {
    const f = Buffer.alloc(5 + data.length);
    f[0] = flags;
    f.writeUInt32BE(length, 1);
    data.copy(f, 5);
    return f;
  };
  const rest = bodies.slice(1).map((b) => frame(0, b));
  const first = bodies[0];
  if (first === undefined) return { chunks: [], headers };
  let head: Buffer[];
  switch (mutation) {
    case "none":
    case "chunked":
      head = [frame(0, first)];
      break;
    case "length-long":
      head = [frame(0, first, first.length + 7)];
      break;
    case "length-short":
      head = [first.length > 0 ? frame(0, first, first.length - 1) : Buffer.concat([frame(0, first), Buffer.from([0x2a])])];
      break;
    case "compressed-no-encoding":
      head = [frame(1, first)];
      break;
    case "gzip":
      headers[encodingHeader] = "gzip";
      head = [frame(1, gzipSync(first))];
      break;
    case "gzip-broken":
      headers[encodingHeader] = "gzip";
      head = [frame(1, Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), first]))];
      break;
    case "trailing-garbage":
      return { chunks: [frame(0, first), ...rest, Buffer.from([0x00, 0x00, 0x00])], headers };
    case "two-messages":
      head = [frame(0, first), frame(0, first)];
      break;
    case "unknown-flags":
      head = [frame(0x04, first)];
      break;
    case "empty-body":
      return { chunks: [], headers };
  }
  const all = [...head, ...rest];
  if (mutation !== "chunked") return { chunks: all, headers };
  // Many small writes (a few bytes each at the start, where the prefix is): the server must put the frames back together.
  const whole = Buffer.concat(all);
  const chunks: Buffer[] = [];
  for (let i = 0; i < whole.length; ) {
    const n = i < 32 ? 3 : Math.max(3, whole.length >> 4);
    chunks.push(whole.subarray(i, i + n));
    i += n;
  }
  return { chunks, headers };
}

/** Splits gRPC-style frames (5-byte prefix) as they come; calls back per complete frame. */
class FrameReader {
  private buf: Buffer<ArrayBufferLike> = Buffer.alloc(0);
  constructor(private readonly onFrame: (flags: number, data: Buffer) => void) {}
  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    while (this.buf.length >= 5) {
      const len = this.buf.readUInt32BE(1);
      if (this.buf.length < 5 + len) return;
      this.onFrame(this.buf[0], this.buf.subarray(5, 5 + len));
      this.buf = this.buf.subarray(5 + len);
    }
  }
}

/** A grpc-message as it must be: printable ASCII, percent-encoding valid UTF-8. */
function checkGrpcMessage(raw: string | undefined, a: Answer): void {
  if (raw === undefined) return;
  a.rawMessage = raw;
  if (!/^[\x20-\x7e]*$/.test(raw)) {
    a.malformed = `grpc-message has bytes outside printable ASCII: ${JSON.stringify(raw.slice(0, 80))}`;
    return;
  }
  try {
    a.message = decodeURIComponent(raw);
  } catch {
    a.malformed = `grpc-message is not percent-encoded UTF-8: ${raw.slice(0, 80)}`;
  }
}

const CONNECT_CODES: Record<string, number> = {
  canceled: 1,
  unknown: 2,
  invalid_argument: 3,
  deadline_exceeded: 4,
  not_found: 5,
  already_exists: 6,
  permission_denied: 7,
  resource_exhausted: 8,
  failed_precondition: 9,
  aborted: 10,
  out_of_range: 11,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
  data_loss: 15,
  unauthenticated: 16,
};

/** A Connect error body: JSON with a known code and a string message. */
function connectError(body: Buffer, a: Answer): void {
  let json: { code?: unknown; message?: unknown };
  try {
    json = JSON.parse(body.toString("utf8"));
  } catch {
    a.malformed = `a Connect error body that is not JSON: ${body.toString("utf8").slice(0, 80)}`;
    return;
  }
  const code = typeof json.code === "string" ? CONNECT_CODES[json.code] : undefined;
  if (code === undefined) {
    a.malformed = `a Connect error with an unknown code: ${JSON.stringify(json.code)}`;
    return;
  }
  a.code = code;
  if (json.message !== undefined && typeof json.message !== "string") a.malformed = "a Connect error whose message is not a string";
  a.message = typeof json.message === "string" ? json.message : "";
  if (/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(a.message)) a.malformed = "a Connect error message with a lone surrogate";
}

/** The connections to one server, by caller: HTTP/2 sessions (renewed every so often) and an HTTP/1.1 agent. */
export class Connections {
  private readonly h2 = new Map<string, { session: http2.ClientHttp2Session; streams: number; carried: number[] }[]>();
  readonly agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  /** The last cases each connection carried, by its local port: a leak report names them. */
  private readonly carried = new Map<number, number[]>();
  /** Streams one HTTP/2 connection carries before a new one replaces it, so that connections come and go too. */
  static STREAMS_PER_SESSION = 400;

  constructor(readonly url: string) {}

  session(caller: string, slot: number): http2.ClientHttp2Session {
    let pool = this.h2.get(caller);
    if (!pool) this.h2.set(caller, (pool = []));
    let entry = pool[slot];
    if (!entry || entry.session.closed || entry.session.destroyed || entry.streams >= Connections.STREAMS_PER_SESSION) {
      // Closed a little later, not at once: a stream made on it an instant ago may not have gone out yet,
      // and closing would refuse it (REFUSED_STREAM) on this side, before the server ever saw it.
      const old = entry?.session;
      if (old) setTimeout(() => old.close(), 5000).unref();
      const session = http2.connect(this.url);
      session.on("error", () => undefined);
      session.unref();
      const carried: number[] = [];
      session.once("connect", (_s, socket) => socket.localPort && this.carried.set(socket.localPort, carried));
      entry = pool[slot] = { session, streams: 0, carried };
    }
    entry.streams++;
    return entry.session;
  }

  /** Notes that an HTTP/2 stream of case `serial` went on the caller's connection in `slot`. */
  carriedOn(caller: string, slot: number, serial: number): void {
    const carried = this.h2.get(caller)?.[slot]?.carried;
    if (carried) keepLast(carried, serial);
  }

  /** Notes that HTTP/1.1 request of case `serial` went on `socket`. */
  carriedOnSocket(socket: net.Socket, serial: number): void {
    const note = () => {
      const port = socket.localPort;
      if (!port) return;
      let carried = this.carried.get(port);
      if (!carried) this.carried.set(port, (carried = []));
      keepLast(carried, serial);
    };
    if (socket.localPort) note();
    else socket.once("connect", note);
  }

  /** The last cases the connection from this local port carried (none if it was not the fuzzer's). */
  carriedBy(port: number): number[] {
    return this.carried.get(port) ?? [];
  }

  /** Closes every connection (the leak checks then look at the server with no client left). */
  async close(): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const pool of this.h2.values()) {
      for (const entry of pool) {
        if (!entry || entry.session.destroyed) continue;
        const { session } = entry;
        // Gracefully, as clients do; a connection whose streams the server keeps open is cut after 2 s.
        closing.push(
          new Promise<void>((r) => {
            const cut = setTimeout(() => {
              session.destroy();
              r();
            }, 2000);
            session.once("close", () => {
              clearTimeout(cut);
              r();
            });
            session.close();
          }),
        );
      }
    }
    this.h2.clear();
    await Promise.all(closing);
    this.agent.destroy();
  }
}

export interface Send {
  c: FuzzCase;
  encoded: Encoded;
  /** Authorization header, if any. */
  authorization?: string;
  connections: Connections;
  serial: number;
}

export function send(s: Send): Promise<Answer> {
  switch (s.c.wire) {
    case "grpc":
    case "grpc-json":
      return sendH2(s);
    default:
      return sendH1(s);
  }
}

function timeoutHeader(ms: number | undefined): Record<string, string> {
  return ms === undefined ? {} : { "grpc-timeout": `${ms}m` };
}

/**
 * A call's answer bound, measured from its last progress rather than from its start: it runs out after its
 * deadline + ANSWER_BOUND_MS in which the call made none. Progress is a chunk of the request taken off
 * the client (HTTP/2 sends only a stream window ahead of what the server has read), or anything answered.
 * A body of megabytes through two starved event loops on a loaded machine keeps moving and is waited for;
 * a call the server stopped serving does not move, and is reported.
 */
class Stall {
  private timer: NodeJS.Timeout;
  /** However much it moves, a call that goes on this long past its deadline is not answered either. */
  private readonly ceiling: NodeJS.Timeout;
  private stopped = false;
  constructor(
    private readonly ms: number,
    private readonly onStall: () => void,
  ) {
    this.timer = setTimeout(onStall, ms);
    this.ceiling = setTimeout(onStall, ms * 12);
  }
  progress(): void {
    // A write's callback may come after the call ended (its status came first): nothing to time then.
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(this.onStall, this.ms);
  }
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.ceiling);
  }
}

const stallAfter = (c: FuzzCase) => ANSWER_BOUND_MS + (c.timeoutMs ?? 0);

/** The most written at once: a body of megabytes is progress piece by piece, not only once all of it is out. */
const PIECE = 16 * 1024;

/**
 * Writes the chunks in order, waiting out back pressure, in pieces of at most PIECE bytes (the bytes on the
 * wire are the same); each piece flushed is progress, counted in a.sent.
 */
async function writeAll(
  w: { write(chunk: Buffer, cb: (err?: Error | null) => void): boolean; once(e: "drain", f: () => void): unknown; destroyed: boolean },
  chunks: Buffer[],
  stall: Stall,
  a: Answer,
  between?: (i: number) => Promise<unknown>,
): Promise<boolean> {
  const sent = (a.sent = { bytes: 0, of: chunks.reduce((n, c) => n + c.length, 0) });
  for (const [i, chunk] of chunks.entries()) {
    for (let at = 0; at < chunk.length || (at === 0 && chunk.length === 0); at += PIECE) {
      if (w.destroyed) return false;
      const piece = chunk.subarray(at, at + PIECE);
      const flushed = (err?: Error | null) => {
        if (err) return;
        sent.bytes += piece.length;
        stall.progress();
      };
      if (!w.write(piece, flushed)) await new Promise((r) => w.once("drain", () => r(undefined)));
      if (chunk.length === 0) break;
    }
    if (between) await between(i);
  }
  return !w.destroyed;
}

function sendH2(s: Send): Promise<Answer> {
  const { c } = s;
  const started = Date.now();
  const a: Answer = { messages: [], json: c.wire === "grpc-json", cancelled: false, unanswered: false, ms: 0 };
  const kind = METHODS[c.method].kind;
  const bodies: Buffer[] = c.ending === "bad-then-more" ? [Buffer.from([0xff, 0xff, 0xff]), ...s.encoded.bodies.slice(0, 2), ...pad(s.encoded.bodies, 2)] : s.encoded.bodies;
  const { chunks, headers: extra } = c.ending === "bad-then-more" ? framed(bodies, "none", "grpc-encoding") : framed(bodies, c.frame, "grpc-encoding");
  return new Promise<Answer>((resolve) => {
    let session: http2.ClientHttp2Session;
    let stream: http2.ClientHttp2Stream;
    const fields: Record<string, string> = {};
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      stall.stop();
      const status = fields["grpc-status"];
      if (status !== undefined) {
        a.code = Number(status);
        if (!/^\d+$/.test(status) || a.code > 16) a.malformed = `grpc-status ${JSON.stringify(status)}`;
        checkGrpcMessage(fields["grpc-message"], a);
      } else if (!a.cancelled && !a.unanswered) {
        if (fields[":status"] !== undefined && fields[":status"] !== "200") a.httpStatus = Number(fields[":status"]);
        a.reset = stream?.rstCode ?? -1;
      }
      a.ms = Date.now() - started;
      resolve(a);
    };
    // A cancel ends the call for the client there and then: what the server does next is for the leak checks.
    const cancel = () => {
      if (done || a.code !== undefined) return;
      a.cancelled = true;
      stream.close(http2.constants.NGHTTP2_CANCEL);
      finish();
    };
    const stall = new Stall(stallAfter(c), () => {
      a.unanswered = true;
      stream?.close(http2.constants.NGHTTP2_CANCEL);
      finish();
    });
    try {
      session = s.connections.session(`${c.caller}`, s.serial % 3);
      s.connections.carriedOn(`${c.caller}`, s.serial % 3, s.serial);
      stream = session.request({
        ":method": "POST",
        ":path": METHODS[c.method].path,
        "content-type": c.wire === "grpc-json" ? "application/grpc+json" : s.serial % 2 ? "application/grpc+proto" : "application/grpc",
        te: "trailers",
        ...(s.authorization ? { authorization: s.authorization } : {}),
        ...timeoutHeader(c.timeoutMs),
        ...extra,
      });
    } catch (err) {
      a.malformed = `the client could not open a stream: ${(err as Error).message}`;
      a.reset = -1;
      finish();
      return;
    }
    const end = c.ending === "half-close" || c.ending === "bad-then-more" || kind !== "bidi";
    // The status ends the call: a client stops there, whatever its own side of the stream still holds.
    let onStatus: () => void = () => undefined;
    const statusCame = new Promise<void>((r) => (onStatus = r));
    const take = (h: http2.IncomingHttpHeaders) => {
      stall.progress();
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") fields[k] = v;
      if (fields["grpc-status"] !== undefined) {
        onStatus();
        finish();
        // A client that still has messages to send and a half-close to make does so (as gRPC clients
        // that write without reading do); one that would otherwise never end its side cancels.
        if (!end && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      }
    };
    const reader = new FrameReader((flags, data) => {
      if (flags & 0x80) return;
      a.messages.push(Buffer.from(data));
      if (c.ending === "cancel-after-first" && a.messages.length === 1) cancel();
    });
    // A stream cancelled "after its first answer" may never be answered (its message is incomplete, and
    // the server rightly waits for the rest): the client gives up waiting after a while, as clients do.
    if (c.ending === "cancel-after-first") setTimeout(cancel, CANCEL_AFTER_FIRST_MS).unref();
    stream.on("response", take);
    stream.on("trailers", take);
    stream.on("data", (d: Buffer) => {
      stall.progress();
      reader.push(d);
    });
    stream.on("error", () => undefined);
    stream.on("close", finish);
    const write = async () => {
      // The unreadable message first; the rest once the server has answered it (or has had time to).
      const between = (i: number) => (i === 0 && c.ending === "bad-then-more" ? Promise.race([statusCame, new Promise((r) => setTimeout(r, 300))]) : Promise.resolve());
      if (!(await writeAll(stream, chunks, stall, a, between))) return;
      if (c.ending === "cancel-now") return cancel();
      // A bidi stream that is cancelled after its first answer, but sends nothing to be answered, is cancelled now.
      if (c.ending === "cancel-after-first" && kind === "bidi" && chunks.length === 0) return cancel();
      if (end && !stream.destroyed) stream.end();
    };
    write().catch(() => undefined);
  });
}

function pad(bodies: Buffer[], n: number): Buffer[] {
  // "bad-then-more" sends an unreadable message then two readable ones: empty messages make up the two.
  return Array.from({ length: Math.max(0, n - bodies.length) }, () => Buffer.alloc(0));
}

function sendH1(s: Send): Promise<Answer> {
  const { c } = s;
  const started = Date.now();
  const kind = METHODS[c.method].kind;
  const json = isJson(c.wire);
  const a: Answer = { messages: [], json, cancelled: false, unanswered: false, ms: 0 };
  const base: Record<string, string> = { ...(s.authorization ? { authorization: s.authorization } : {}) };
  let chunks: Buffer<ArrayBufferLike>[];
  let headers: Record<string, string>;
  let style: "grpc-web" | "connect-unary" | "connect-stream";
  if (c.wire.startsWith("grpc-web")) {
    style = "grpc-web";
    const f = framed(s.encoded.bodies, c.frame, "grpc-encoding");
    chunks = f.chunks;
    headers = { ...base, "content-type": json ? "application/grpc-web+json" : "application/grpc-web+proto", "x-grpc-web": "1", ...timeoutHeader(c.timeoutMs), ...f.headers };
  } else if (kind === "unary") {
    style = "connect-unary";
    let body: Buffer<ArrayBufferLike> = s.encoded.bodies[0] ?? Buffer.alloc(0);
    const h: Record<string, string> = {};
    if (c.frame === "gzip") body = gzipSync(body);
    // Broken gzip: gzip's header, then bytes that are no deflate stream (not an empty body, which could pass for no message).
    if (c.frame === "gzip-broken") body = Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), body]);
    if (c.frame === "gzip" || c.frame === "gzip-broken") h["content-encoding"] = "gzip";
    chunks = c.frame === "chunked" ? [...[...body.subarray(0, 32)].map((x) => Buffer.from([x])), body.subarray(32)] : [body];
    headers = {
      ...base,
      "content-type": json ? "application/json" : "application/proto",
      "connect-protocol-version": "1",
      ...(c.timeoutMs !== undefined ? { "connect-timeout-ms": String(c.timeoutMs) } : {}),
      ...h,
    };
  } else {
    style = "connect-stream";
    const f = framed(s.encoded.bodies, c.frame, "connect-content-encoding");
    chunks = f.chunks;
    headers = {
      ...base,
      "content-type": json ? "application/connect+json" : "application/connect+proto",
      "connect-protocol-version": "1",
      ...(c.timeoutMs !== undefined ? { "connect-timeout-ms": String(c.timeoutMs) } : {}),
      ...f.headers,
    };
  }
  const url = new URL(METHODS[c.method].path, s.connections.url);
  return new Promise<Answer>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      stall.stop();
      a.ms = Date.now() - started;
      resolve(a);
    };
    let req: http.ClientRequest;
    const cancel = () => {
      if (done || a.code !== undefined) return;
      a.cancelled = true;
      req.destroy();
      finish();
    };
    const stall = new Stall(stallAfter(c), () => {
      a.unanswered = true;
      req.destroy();
      finish();
    });
    // A keep-alive connection the server closed as idle just as this request went out on it: the server
    // never read the request. Sent again once, on a new connection, as HTTP clients do (Node's own
    // documentation of `reusedSocket`); an answer that began, or a fresh connection's failure, is final.
    const send = (again: boolean) => {
      req = http.request(url, { method: "POST", headers, agent: s.connections.agent });
      req.once("socket", (socket) => s.connections.carriedOnSocket(socket, s.serial));
      let answered = false;
      req.on("error", (err: NodeJS.ErrnoException) => {
        if (!again && !answered && !done && !a.cancelled && req.reusedSocket && (err.code === "ECONNRESET" || err.message === "socket hang up")) {
          a.resentAfterReset = true;
          return send(true);
        }
        if (!done && !a.cancelled && a.code === undefined) a.connectionFailed ??= `HTTP/1.1 connection failed: ${err.message}`;
        finish();
      });
      req.on("response", (res) => {
        answered = true;
        const body: Buffer[] = [];
        const fields: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") fields[k] = v;
        const reader = new FrameReader((flags, data) => {
          if (style === "grpc-web" && flags & 0x80) {
            for (const line of data.toString("latin1").split("\r\n")) {
              const i = line.indexOf(":");
              if (i > 0) fields[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
            }
            return;
          }
          if (style === "connect-stream" && flags & 0x02) {
            const end = JSON.parse(data.toString("utf8") || "{}") as { error?: unknown };
            if (end.error) connectError(Buffer.from(JSON.stringify(end.error)), a);
            else a.code = 0;
            return;
          }
          a.messages.push(Buffer.from(data));
          if (c.ending === "cancel-after-first" && a.messages.length === 1) cancel();
        });
        if (c.ending === "cancel-after-first") setTimeout(cancel, CANCEL_AFTER_FIRST_MS).unref();
        stall.progress();
        res.on("data", (d: Buffer) => {
          stall.progress();
          if (style === "connect-unary" || res.statusCode !== 200) body.push(d);
          else {
            try {
              reader.push(d);
            } catch (err) {
              a.malformed = `an answer frame that does not parse: ${(err as Error).message}`;
            }
          }
        });
        res.on("error", () => finish());
        res.on("close", () => {
          if (done) return;
          const whole = Buffer.concat(body);
          if (style === "connect-unary") {
            if (res.statusCode === 200) {
              a.code = 0;
              a.messages.push(whole);
            } else connectError(whole, a);
          } else if (style === "grpc-web") {
            const status = fields["grpc-status"];
            if (status === undefined && res.statusCode !== 200 && whole.length) a.rawMessage = whole.toString("utf8").slice(0, 200);
            if (status !== undefined) {
              a.code = Number(status);
              checkGrpcMessage(fields["grpc-message"], a);
            } else if (!a.cancelled) a.httpStatus = res.statusCode;
          } else if (a.code === undefined && !a.cancelled) {
            // A Connect stream refused before it began answers like a unary call: an HTTP error with a JSON body.
            if (res.statusCode !== 200) connectError(whole.length ? whole : Buffer.from("{}"), a);
            a.httpStatus = res.statusCode;
          }
          finish();
        });
      });
      const sending = req;
      (async () => {
        if (!(await writeAll(sending, chunks, stall, a))) return;
        if (c.ending === "cancel-now") return cancel();
        sending.end();
      })().catch(() => undefined);
    };
    send(false);
  });
}

function keepLast(list: number[], serial: number, n = 8): void {
  list.push(serial);
  if (list.length > n) list.shift();
}

/** Decodes an answer message of a method (binary or JSON); undefined if it does not decode. */
export function decodeAnswer<T>(method: Method, a: Answer, data: Buffer): T | undefined {
  const schema = SCHEMAS[method].output;
  try {
    return (a.json ? fromJson(schema, JSON.parse(data.toString("utf8")), { ignoreUnknownFields: true }) : fromBinary(schema, data)) as T;
  } catch {
    return undefined;
  }
}

/** Decodes the request as sent (after mutations), as the server would read it; undefined if it does not decode. */
export function decodeRequest<T>(c: FuzzCase, body: Buffer | undefined): T | undefined {
  if (body === undefined) return undefined;
  const schema = SCHEMAS[c.method].input;
  try {
    return (isJson(c.wire) ? fromJson(schema, JSON.parse(body.toString("utf8")), { ignoreUnknownFields: true }) : fromBinary(schema, body)) as T;
  } catch {
    return undefined;
  }
}

export type { Ending };
