// A fenced endpoint (docs/fenced-http.md): a service that owns its state and takes writes over HTTP or
// gRPC refuses a write whose fencing token is stale. The caller sends its token in the `Fencing-Token`
// header, base64 of the token's protobuf (FencingToken) exactly as Acquire returned it; the service
// verifies the signature offline with the server's published keys, checks that the token is for the
// resource being written, then asks its own fence store (client/fence-store.ts) to admit the generation.
// Three ways in: admit() for any framework, middleware() for node:http and express-like servers, and
// interceptor() for @connectrpc/connect servers. By default a resource's admitted requests run one at a
// time in this process, from admit until the handler ends, so that an older generation admitted just
// before a newer one cannot finish its write after the newer one's.
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor, type UnaryRequest, type StreamRequest } from "@connectrpc/connect";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AcquireMode, FencingTokenSchema } from "../gen/ts/fencekeeper/v1/token_pb.js";
import { ErrorInfoSchema } from "../gen/ts/google/rpc/error_details_pb.js";
import type { FenceStore } from "./fence-store.js";
export type { FenceStore, FenceVerdict } from "./fence-store.js";
import { tokenFromProto, tokenToProto, type Token } from "./token.js";
import { verifyToken, type TokenKey, type Verification } from "./verify-token.js";

/** The header that carries the token (HTTP header names are case-insensitive; gRPC metadata is lower case). */
export const FENCING_TOKEN_HEADER = "fencing-token";
/** A token's protobuf is a few hundred bytes; a header far longer is not one. */
const MAX_HEADER_LENGTH = 8192;
const ERROR_DOMAIN = "fencekeeper.io";

/** The value of the Fencing-Token header for a token: base64 of its protobuf, signature and mode included. */
export function fencingTokenHeader(token: Token): string {
  return Buffer.from(toBinary(FencingTokenSchema, create(FencingTokenSchema, tokenToProto(token)))).toString("base64");
}

/** Decodes a Fencing-Token header (base64 or base64url); throws a RangeError that says what is wrong. */
export function parseFencingTokenHeader(value: string): Token {
  const text = value.trim();
  if (text.length > MAX_HEADER_LENGTH) throw new RangeError(`the ${FENCING_TOKEN_HEADER} header is ${text.length} characters, more than any token (${MAX_HEADER_LENGTH})`);
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    throw new RangeError(`the ${FENCING_TOKEN_HEADER} header is not base64: send fencingTokenHeader(lease.token), base64 of the token's protobuf`);
  }
  let proto;
  try {
    proto = fromBinary(FencingTokenSchema, Buffer.from(text, text.includes("-") || text.includes("_") ? "base64url" : "base64"));
  } catch (err) {
    throw new RangeError(`the ${FENCING_TOKEN_HEADER} header is base64 but not a FencingToken protobuf: ${(err as Error).message}`);
  }
  if (!proto.resource) throw new RangeError(`the ${FENCING_TOKEN_HEADER} header's token names no resource`);
  if (proto.generation <= 0n) throw new RangeError(`the ${FENCING_TOKEN_HEADER} header's token has generation ${proto.generation}; generations are positive`);
  if (proto.mode !== AcquireMode.UNSPECIFIED && proto.mode !== AcquireMode.EXCLUSIVE && proto.mode !== AcquireMode.SHARED) {
    throw new RangeError(`the ${FENCING_TOKEN_HEADER} header's token has mode ${proto.mode}, which is not an AcquireMode`);
  }
  return tokenFromProto(proto);
}

/** Where the keys come from: a fixed list, or a fetch such as `() => client.tokenKeys()`. */
export type KeySource = readonly TokenKey[] | ((signal?: AbortSignal) => Promise<readonly TokenKey[]>);

/**
 * The server's token keys, fetched on first use and again when a token names a key id not among them
 * (the server may have a new signing key), at most once per minRefreshMs however many tokens name
 * unknown ids: a flood of forged key ids costs the server one ListTokenKeys a period, no more.
 */
export class TokenKeyCache {
  readonly #source: KeySource;
  readonly #minRefreshMs: number;
  #keys: readonly TokenKey[] = [];
  #lastFetch = -Infinity;
  #lastError: unknown;
  #inflight: Promise<void> | undefined;
  /** How many times the keys were fetched (for metrics and tests). */
  fetches = 0;

  constructor(source: KeySource, o: { minRefreshMs?: number } = {}) {
    this.#source = source;
    this.#minRefreshMs = o.minRefreshMs ?? 10_000;
    if (typeof source !== "function") this.#keys = source;
  }

  /** Verifies the token's signature; throws when the keys are needed and cannot be fetched. */
  async verify(token: Token): Promise<Verification> {
    if (typeof this.#source !== "function") return verifyToken(token, this.#keys);
    if (this.#lastFetch === -Infinity) await this.#refresh();
    let v = verifyToken(token, this.#keys);
    if (!v.ok && v.reason === "unknown key id") {
      if (this.#inflight || performance.now() - this.#lastFetch >= this.#minRefreshMs) {
        await this.#refresh();
        v = verifyToken(token, this.#keys);
      }
      // The key may be new and the list out of date because the last fetch failed: say so, retryably.
      if (!v.ok && v.reason === "unknown key id" && this.#lastError !== undefined) {
        throw new Error(`the token's key id "${token.keyId}" is unknown and the token keys could not be fetched: ${String(this.#lastError)}`);
      }
    }
    return v;
  }

  #refresh(): Promise<void> {
    if (!this.#inflight) {
      this.#lastFetch = performance.now(); // before the call: a failing fetch also waits its turn
      this.fetches++;
      const fetching: Promise<void> = this.#fetch().finally(() => {
        if (this.#inflight === fetching) this.#inflight = undefined;
      });
      this.#inflight = fetching;
    }
    return this.#inflight;
  }

  async #fetch(): Promise<void> {
    try {
      this.#keys = await (this.#source as Exclude<KeySource, readonly TokenKey[]>)();
      this.#lastError = undefined;
    } catch (err) {
      this.#lastError = err;
      if (!this.#keys.length) throw err;
    }
  }
}

export interface FencedEndpointOptions {
  /** The server's token keys: `() => client.tokenKeys()` (fetched and refreshed as TokenKeyCache says), a fixed list, or a cache. */
  keys: KeySource | TokenKeyCache;
  /** The service's own fence per resource (postgresFenceStore, or the Redis and MariaDB stores). */
  store: FenceStore;
  /**
   * Run a resource's admitted requests one at a time in this process, from admit until the handler
   * ends (default true). Off only when the handler's write checks the fence itself, in the same
   * transaction (docs/fenced-http.md, "The race between admit and the write").
   */
  serialize?: boolean;
}

/** Why a request was refused: the HTTP status, the gRPC code, and the words for a person. */
export interface Refusal {
  ok: false;
  /** 400 missing or malformed header, 403 not a genuine or usable token for this resource, 409 stale, 503 store or keys unreachable. */
  httpStatus: 400 | 403 | 409 | 503;
  code: Code;
  /** An ErrorReason name (STALE_TOKEN, TOKEN_SIGNATURE_INVALID, SHARED_TOKEN) where one fits. */
  reason?: "STALE_TOKEN" | "TOKEN_SIGNATURE_INVALID" | "SHARED_TOKEN";
  message: string;
  resource?: string;
  generation?: bigint;
  /** On 409: the fence in force, the generation that has written since. */
  fence?: bigint;
}

export interface Admission {
  ok: true;
  token: Token;
  /** The resource's fence, now the token's generation. */
  fence: bigint;
  /** Ends the request's turn on its resource: call it when the write is over (the middleware and the interceptor do). */
  done(): void;
}

export type HeaderSource = Headers | IncomingMessage["headers"] | Readonly<Record<string, string | readonly string[] | undefined>>;

/** For connect handlers: the admitted token, `ctx.values.get(fencingTokenKey)`. */
export const fencingTokenKey = createContextKey<Token | undefined>(undefined, { description: "the admitted fencing token" });

export interface FencedEndpoint {
  /**
   * The whole check for a write to `resource` whose request has these headers. On `ok`, write, then call
   * done() however the write ends. Never throws: a store or keys failure is a 503 refusal.
   * `store` replaces the endpoint's for this request: a store bound to the handler's own transaction
   * (postgresFenceStore(txClient)), so that the fence and the write commit together and a concurrent
   * admit of the resource, in any process, waits for the commit.
   */
  admit(headers: HeaderSource, resource: string, o?: { store?: FenceStore }): Promise<Admission | Refusal>;
  /**
   * `(req, res, next)` for node:http and express-like servers. resourceOf says which resource the
   * request writes, or undefined for a request that is not fenced. A refusal is answered here (JSON
   * body: code, reason, message, resource, generation, fence); an admitted request goes on to next()
   * with admittedToken(req) set, and its turn ends when the response closes.
   */
  middleware(resourceOf: (req: IncomingMessage) => string | undefined): (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;
  /**
   * An interceptor for a connect server (connectNodeAdapter({ interceptors: [...] })). resourceOf says
   * which resource the call writes, or undefined for a call that is not fenced; a refusal is a
   * ConnectError with an ErrorInfo (domain fencekeeper.io) and, when stale, metadata "fence". The turn
   * ends when the handler returns (for a streaming response: when it returns the stream).
   */
  interceptor(resourceOf: (req: UnaryRequest | StreamRequest) => string | undefined): Interceptor;
}

const admitted = new WeakMap<IncomingMessage, Token>();

/** The token a request was admitted with, in a handler behind middleware(). */
export function admittedToken(req: IncomingMessage): Token | undefined {
  return admitted.get(req);
}

export function fencedEndpoint(o: FencedEndpointOptions): FencedEndpoint {
  const keys = o.keys instanceof TokenKeyCache ? o.keys : new TokenKeyCache(o.keys);
  const turns = new Turns();
  const serialize = o.serialize ?? true;

  async function admit(headers: HeaderSource, resource: string, a: { store?: FenceStore } = {}): Promise<Admission | Refusal> {
    const value = headerOf(headers);
    if (value === undefined) {
      return refuse(400, Code.InvalidArgument, `a write to "${resource}" needs its fencing token in the ${FENCING_TOKEN_HEADER} header (fencingTokenHeader(lease.token))`, { resource });
    }
    let token: Token;
    try {
      token = parseFencingTokenHeader(value);
    } catch (err) {
      return refuse(400, Code.InvalidArgument, (err as Error).message, { resource });
    }
    const about = { resource: token.resource, generation: token.generation };
    // The signature first: a token that fencekeeper did not issue never reaches the store, and cannot
    // raise the fence with a made-up generation.
    let v: Verification;
    try {
      v = await keys.verify(token);
    } catch (err) {
      return refuse(503, Code.Unavailable, `cannot check the token's signature now: ${(err as Error).message}; try again`, about);
    }
    if (!v.ok) {
      return refuse(403, Code.PermissionDenied, `the fencing token's signature does not verify (${v.reason}): send the token exactly as Acquire returned it`, about, "TOKEN_SIGNATURE_INVALID");
    }
    if (token.resource !== resource) {
      return refuse(403, Code.PermissionDenied, `the fencing token is for "${token.resource}", and this request writes "${resource}": a resource's generations say nothing about another's`, about);
    }
    if (token.shared) {
      return refuse(403, Code.PermissionDenied, `a shared token (generation ${token.generation} of "${resource}") cannot write: writes need an exclusive acquisition's token`, about, "SHARED_TOKEN");
    }
    const leave = serialize ? await turns.enter(resource) : () => {};
    try {
      const verdict = await (a.store ?? o.store).admit(resource, token.generation);
      if (verdict.status === "stale") {
        leave();
        return refuse(409, Code.FailedPrecondition, `stale fencing token: generation ${verdict.fence} of "${resource}" has written since generation ${token.generation}; this holder has lost its lease and must stop`, { ...about, fence: verdict.fence }, "STALE_TOKEN");
      }
      return { ok: true, token, fence: verdict.fence, done: leave };
    } catch (err) {
      leave();
      return refuse(503, Code.Unavailable, `the fence store did not answer: ${(err as Error).message}; try again`, about);
    }
  }

  return {
    admit,
    middleware: (resourceOf) => (req, res, next) => {
      let resource: string | undefined;
      try {
        resource = resourceOf(req);
      } catch (err) {
        return next(err);
      }
      if (resource === undefined) return next();
      // Listened for from the start: a client that goes away while the request waits for its turn
      // must not leave the turn taken for good.
      let closed = false;
      let leave: (() => void) | undefined;
      res.once("close", () => {
        closed = true;
        leave?.();
      });
      admit(req.headers, resource).then((a) => {
        if (!a.ok) return answer(res, a);
        if (closed) return a.done();
        leave = a.done;
        admitted.set(req, a.token);
        next();
      }, next);
    },
    interceptor: (resourceOf) => (next) => async (req) => {
      const resource = resourceOf(req);
      if (resource === undefined) return next(req);
      const a = await admit(req.header, resource);
      if (!a.ok) throw toConnectError(a);
      try {
        req.contextValues.set(fencingTokenKey, a.token);
        return await next(req);
      } finally {
        a.done();
      }
    },
  };
}

function headerOf(headers: HeaderSource): string | undefined {
  const v = headers instanceof Headers ? headers.get(FENCING_TOKEN_HEADER) : headers[FENCING_TOKEN_HEADER] ?? headers["Fencing-Token"];
  if (v === null || v === undefined) return undefined;
  // Two headers are one too many: joined, they are not base64, and the parse says so.
  return typeof v === "string" ? v : v.join(", ");
}

function refuse(httpStatus: Refusal["httpStatus"], code: Code, message: string, about: { resource?: string; generation?: bigint; fence?: bigint }, reason?: Refusal["reason"]): Refusal {
  return { ok: false, httpStatus, code, message, ...(reason ? { reason } : {}), ...about };
}

function answer(res: ServerResponse, r: Refusal): void {
  const body = {
    code: Code[r.code],
    ...(r.reason ? { reason: r.reason } : {}),
    message: r.message,
    ...(r.resource !== undefined ? { resource: r.resource } : {}),
    ...(r.generation !== undefined ? { generation: String(r.generation) } : {}),
    ...(r.fence !== undefined ? { fence: String(r.fence) } : {}),
  };
  res.writeHead(r.httpStatus, { "content-type": "application/json", ...(r.httpStatus === 503 ? { "retry-after": "1" } : {}) });
  res.end(JSON.stringify(body));
}

/** The refusal as a connect error, with an ErrorInfo as the fencekeeper server sends one. */
export function toConnectError(r: Refusal): ConnectError {
  const metadata: Record<string, string> = {};
  if (r.resource !== undefined) metadata.resource = r.resource;
  if (r.generation !== undefined) metadata.generation = String(r.generation);
  if (r.fence !== undefined) metadata.fence = String(r.fence);
  const details = r.reason ? [{ desc: ErrorInfoSchema, value: { reason: r.reason, domain: ERROR_DOMAIN, metadata } }] : [];
  return new ConnectError(r.message, r.code, undefined, details);
}

/**
 * One turn at a time per resource, first come first served: enter() resolves when every earlier
 * entrant of the resource has left. A resource nobody is in holds no memory.
 */
class Turns {
  readonly #tails = new Map<string, Promise<void>>();

  async enter(resource: string): Promise<() => void> {
    const before = this.#tails.get(resource);
    let leave!: () => void;
    const mine = new Promise<void>((r) => (leave = r));
    const tail = before ? before.then(() => mine) : mine;
    this.#tails.set(resource, tail);
    if (before) await before;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      leave();
      if (this.#tails.get(resource) === tail) this.#tails.delete(resource);
    };
  }
}
