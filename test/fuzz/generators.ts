// What the fuzzer sends, as fast-check arbitraries. A case is symbolic: the request is a template of the
// message to send, in which the things only a running server knows (a token of alice's current lease,
// one of bob's old generations, a lease id) are references that the engine fills in when it sends the
// case (test/fuzz/engine.ts). So the sequence of cases depends on the seed alone, while every reference
// still lands on a real token or lease of the moment.
//
// A case says: which server (without or with authentication), who calls, which method over which wire
// protocol (gRPC, gRPC with JSON, gRPC-Web, Connect JSON or binary), what the message is (valid, or with
// out-of-range values), what is done to its bytes (flips, cuts, insertions) and to its framing (length
// prefixes that lie, a compressed flag without grpc-encoding, broken gzip, trailing garbage, several
// messages on a unary call), and how the call ends (half-close, cancel early, a deadline).
import fc from "fast-check";

/** The methods the fuzzer calls, by their path. */
export const METHODS = {
  Acquire: { path: "/fencekeeper.v1.LeaseService/Acquire", kind: "unary" },
  Renew: { path: "/fencekeeper.v1.LeaseService/Renew", kind: "unary" },
  Release: { path: "/fencekeeper.v1.LeaseService/Release", kind: "unary" },
  Describe: { path: "/fencekeeper.v1.LeaseService/Describe", kind: "unary" },
  OpenSession: { path: "/fencekeeper.v1.LeaseService/OpenSession", kind: "unary" },
  CloseSession: { path: "/fencekeeper.v1.LeaseService/CloseSession", kind: "unary" },
  ListTokenKeys: { path: "/fencekeeper.v1.LeaseService/ListTokenKeys", kind: "unary" },
  KeepAlive: { path: "/fencekeeper.v1.LeaseService/KeepAlive", kind: "bidi" },
  Observe: { path: "/fencekeeper.v1.LeaseService/Observe", kind: "server" },
  Put: { path: "/fencekeeper.v1.FencedStoreService/Put", kind: "unary" },
  Get: { path: "/fencekeeper.v1.FencedStoreService/Get", kind: "unary" },
  Delete: { path: "/fencekeeper.v1.FencedStoreService/Delete", kind: "unary" },
  Txn: { path: "/fencekeeper.v1.FencedStoreService/Txn", kind: "unary" },
  Range: { path: "/fencekeeper.v1.FencedStoreService/Range", kind: "unary" },
  GetFence: { path: "/fencekeeper.v1.FencedStoreService/GetFence", kind: "unary" },
  Batch: { path: "/fencekeeper.v1.FencedStoreService/Batch", kind: "unary" },
  ListResources: { path: "/fencekeeper.v1.LeaseService/ListResources", kind: "unary" },
  LiftLockDelay: { path: "/fencekeeper.v1.LeaseService/LiftLockDelay", kind: "unary" },
  Proclaim: { path: "/fencekeeper.v1.LeaseService/Proclaim", kind: "unary" },
  LeaseBatch: { path: "/fencekeeper.v1.LeaseService/LeaseBatch", kind: "unary" },
  AcquireAll: { path: "/fencekeeper.v1.LeaseService/AcquireAll", kind: "unary" },
  HealthCheck: { path: "/grpc.health.v1.Health/Check", kind: "unary" },
  HealthList: { path: "/grpc.health.v1.Health/List", kind: "unary" },
  HealthWatch: { path: "/grpc.health.v1.Health/Watch", kind: "server" },
  Reflection: { path: "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", kind: "bidi" },
  ReflectionAlpha: { path: "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", kind: "bidi" },
} as const;
export type Method = keyof typeof METHODS;

export type Wire = "grpc" | "grpc-json" | "grpc-web" | "grpc-web-json" | "connect-proto" | "connect-json";

/** Who calls: the two principals, nobody (no credentials), or someone with credentials that do not verify. */
export type Caller = "alice" | "bob" | "anonymous" | "forged";
export const PRINCIPALS = ["alice", "bob"] as const;
export type Principal = (typeof PRINCIPALS)[number];

/** How a token in a request is made from the tokens the principals hold. */
export type TokenVariant =
  | "current" // the principal's token of a lease it holds now
  | "old" // a token of a generation it held before (released, or superseded)
  | "generation+1" // tampered: the generation one greater (a signed token no longer verifies)
  | "generation-1"
  | "lease-id" // tampered lease id
  | "principal" // the principal claimed is the other one
  | "resource" // another resource
  | "signature" // one bit of the signature flipped
  | "unsigned" // signature and key id stripped
  | "key-id-ff" // a key id with byte 0xff in it (not UTF-8)
  | "forged-zero" // generation 0
  | "forged-negative" // generation -1
  | "forged-huge"; // a generation far beyond any issued
export interface TokenRef {
  $token: { owner: Principal; pick: number; variant: TokenVariant };
}

/** A lease id: of one of the principal's leases (current or old), of a session, or an id no lease has. */
export type LeaseVariant = "current" | "old" | "session" | "zero" | "negative" | "random" | "max";
export interface LeaseRef {
  $lease: { owner: Principal; pick: number; variant: LeaseVariant };
}

/** One of the resources the principals hold leases on (the model's), by index. */
export interface ResourceRef {
  $resource: number;
}
/** A unique marker the engine puts in front of a value, so that the value found in etcd names its writer. */
export interface ValueRef {
  $value: Uint8Array;
}

/** Resources whose leases the model tracks: 0-2 are alice's, 3-5 bob's, 6-7 left free for Acquire. */
export const MODEL_RESOURCES = 8;
export const resourceName = (i: number) => `fz/r${i}`;
export const designatedHolder = (i: number): Principal | undefined => (i < 3 ? "alice" : i < 6 ? "bob" : undefined);

/** A lone-surrogate-free stand-in for bytes that are not UTF-8: the engine swaps its UTF-8 encoding (EE 80 80) for bad bytes. */
export const BAD_UTF8 = "\ue000";

/** What is done to the encoded message, byte for byte. Positions are fractions of its length. */
export type ByteMutation =
  | { kind: "flip"; at: number; xor: number }
  | { kind: "truncate"; at: number }
  | { kind: "insert"; at: number; bytes: number[] }
  | { kind: "replace"; bytes: number[] }
  | { kind: "prefix"; bytes: number[] };

/** What is done to the framing of messages (5-byte prefix: flag, length). */
export type FrameMutation =
  | "none"
  | "length-long" // announces more bytes than follow
  | "length-short" // announces fewer bytes: the rest is a broken second frame
  | "compressed-no-encoding" // flag 1 without grpc-encoding
  | "gzip" // a valid gzip frame with grpc-encoding: gzip
  | "gzip-broken" // flag 1, grpc-encoding: gzip, bytes that are not gzip
  | "trailing-garbage" // bytes after the last frame that are no frame
  | "two-messages" // the message twice (on a unary call: one too many)
  | "unknown-flags" // flag bits no one defined
  | "empty-body" // no frame at all
  | "chunked"; // the frame sent in many small writes

/** JSON-only oddities: the engine applies them to the JSON text. */
export type JsonMutation = "none" | "unknown-field" | "wrong-type" | "lone-surrogate-escape" | "deep-nesting" | "not-json" | "bad-byte-prefix" | "null";

/** How a call ends from the client's side. */
export type Ending =
  | "half-close" // send, half-close, read to the end
  | "cancel-now" // send, then cancel at once
  | "cancel-after-first" // cancel once the first answer message (or the status) arrived
  | "deadline" // send with grpc-timeout and never half-close (streams) or wait (unary)
  | "bad-then-more"; // streams: an unreadable message, then two valid ones, then half-close

export interface FuzzCase {
  server: 0 | 1; // 0: no authentication, 1: JWT authentication
  caller: Caller;
  method: Method;
  wire: Wire;
  /** The request messages (templates with references); one for unary and server-stream calls. */
  messages: unknown[];
  bytes: ByteMutation | undefined;
  frame: FrameMutation;
  json: JsonMutation;
  ending: Ending;
  /** grpc-timeout / connect-timeout-ms, ms. */
  timeoutMs: number | undefined;
  /** The input can never succeed, whatever the state: it must not be OK, nor answered with a retryable code. */
  hopeless: boolean;
}

// --- values -------------------------------------------------------------------------------------------

type Odd<T> = { value: T; hopeless: boolean };
/** a, in percent of the cases; else undefined. */
const sometimes = <T>(a: fc.Arbitrary<T>, percent: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: 100 - percent, arbitrary: fc.constant(undefined) }, { weight: percent, arbitrary: a });
const good = <T>(a: fc.Arbitrary<T>) => a.map((value) => ({ value, hopeless: false }));
const bad = <T>(a: fc.Arbitrary<T>) => a.map((value) => ({ value, hopeless: true }));

const resourceRef = fc.integer({ min: 0, max: MODEL_RESOURCES - 1 }).map((i): ResourceRef => ({ $resource: i }));

/** A resource name: mostly a model resource, else a valid free-form one, else out of range. */
const resource: fc.Arbitrary<Odd<unknown>> = fc.oneof(
  { weight: 6, arbitrary: good(resourceRef) },
  { weight: 1, arbitrary: good(fc.stringMatching(/^fz\/[a-z0-9é☃/_.-]{1,20}$/)) },
  {
    weight: 3,
    arbitrary: bad(
      fc.oneof(
        fc.constant(""),
        fc.constant("x".repeat(257)),
        fc.constant("é".repeat(129)), // 258 bytes in 129 characters
        fc.constantFrom("fz/a\u0000b", "fz/\u007f", "fz/\u0085", "\n", "fz/a\tb"),
        fc.constant(`fz/${BAD_UTF8}`),
        fc.constant(BAD_UTF8),
      ),
    ),
  },
);

const key: fc.Arbitrary<Odd<string>> = fc.oneof(
  { weight: 6, arbitrary: good(fc.constantFrom("k0", "k1", "k2", "k3", "dir/k4", "☃")) },
  { weight: 1, arbitrary: good(fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 }).filter((s) => !/[\u0000-\u001f\u007f-\u009f]/.test(s))) },
  { weight: 2, arbitrary: bad(fc.constantFrom("", "k".repeat(1025), "a\u0000", `k${BAD_UTF8}`, "\u0001")) },
);

const value: fc.Arbitrary<Odd<ValueRef>> = fc.oneof(
  { weight: 60, arbitrary: good(fc.uint8Array({ maxLength: 64 }).map(($value) => ({ $value }))) },
  // Over the limit by one byte: rare, since each is a megabyte on the wire.
  { weight: 1, arbitrary: bad(fc.constant({ $value: new Uint8Array(1024 * 1024 + 1) })) },
);

const SECOND = 1000;
/** A TTL in ms: 2 s to 300 s is valid (the server's default maximum); below or above, out of range. */
const ttlMs: fc.Arbitrary<Odd<number | undefined>> = fc.oneof(
  { weight: 6, arbitrary: good(fc.integer({ min: 2 * SECOND, max: 60 * SECOND })) },
  {
    weight: 3,
    arbitrary: bad(fc.oneof(fc.constant(undefined), fc.constantFrom(0, -1, -5 * SECOND, 1999, 301 * SECOND, 2 ** 40), fc.integer({ min: -(2 ** 31), max: 1999 }))),
  },
);

/** A protobuf Duration from ms (negative ones with negative nanos, as the spec wants). */
export function duration(ms: number): { seconds: bigint; nanos: number } {
  const seconds = Math.trunc(ms / 1000);
  return { seconds: BigInt(seconds), nanos: Math.trunc((ms - seconds * 1000) * 1e6) };
}

const principal = fc.constantFrom<Principal>(...PRINCIPALS);
const pick = fc.nat({ max: 1000 });

const GOOD_TOKENS: TokenVariant[] = ["current", "old"];
const BAD_TOKENS: TokenVariant[] = [
  "generation+1",
  "generation-1",
  "lease-id",
  "principal",
  "resource",
  "signature",
  "unsigned",
  "key-id-ff",
  "forged-zero",
  "forged-negative",
  "forged-huge",
];
/** Variants no server may ever take: bad values whatever the authentication. */
export const HOPELESS_TOKENS = new Set<TokenVariant>(["key-id-ff", "forged-zero", "forged-negative", "forged-huge", "signature"]);

const tokenRef: fc.Arbitrary<Odd<TokenRef | undefined>> = fc.oneof(
  { weight: 6, arbitrary: good(fc.record({ owner: principal, pick, variant: fc.constantFrom(...GOOD_TOKENS) }).map(($token) => ({ $token }))) },
  {
    weight: 4,
    arbitrary: fc
      .record({ owner: principal, pick, variant: fc.constantFrom(...BAD_TOKENS) })
      .map(($token) => ({ value: { $token } as TokenRef | undefined, hopeless: HOPELESS_TOKENS.has($token.variant) })),
  },
  { weight: 1, arbitrary: bad(fc.constant(undefined)) },
);

const GOOD_LEASES: LeaseVariant[] = ["current", "old", "session"];
const leaseRef: fc.Arbitrary<Odd<LeaseRef>> = fc.oneof(
  { weight: 6, arbitrary: good(fc.record({ owner: principal, pick, variant: fc.constantFrom(...GOOD_LEASES) }).map(($lease) => ({ $lease }))) },
  { weight: 1, arbitrary: good(fc.record({ owner: principal, pick, variant: fc.constant<LeaseVariant>("random") }).map(($lease) => ({ $lease }))) },
  {
    weight: 2,
    arbitrary: bad(fc.record({ owner: principal, pick, variant: fc.constantFrom<LeaseVariant>("zero", "negative") }).map(($lease) => ({ $lease }))),
  },
);

/** Fence modes: the two defined, unspecified (ORDER), and numbers no enum has. */
const fenceMode: fc.Arbitrary<Odd<number>> = fc.oneof(
  { weight: 8, arbitrary: good(fc.constantFrom(0, 1, 2)) },
  { weight: 1, arbitrary: bad(fc.constantFrom(7, -1, 3, 2 ** 31 - 1)) },
);

const idempotencyKey: fc.Arbitrary<Odd<string>> = fc.oneof(
  { weight: 8, arbitrary: good(fc.constant("")) },
  { weight: 2, arbitrary: good(fc.constantFrom("idem-1", "idem-2", "idem-3")) },
  { weight: 1, arbitrary: bad(fc.constantFrom("i".repeat(257), "i\u0000", `i${BAD_UTF8}`)) },
);

const holder = fc.oneof({ weight: 4, arbitrary: good(fc.constantFrom("", "worker-1", "☃")) }, { weight: 1, arbitrary: bad(fc.constantFrom("h".repeat(257), "h\u0000", `h${BAD_UTF8}`)) });

// --- messages -----------------------------------------------------------------------------------------

type Msg = { message: unknown; hopeless: boolean };
const all = (...xs: { hopeless: boolean }[]) => xs.some((x) => x.hopeless);

const mutation = fc.record({ token: tokenRef, mode: fenceMode, idem: idempotencyKey });
const mutationOf = (m: { token: Odd<TokenRef | undefined>; mode: Odd<number>; idem: Odd<string> }) => ({
  token: m.token.value,
  mode: m.mode.value,
  idempotencyKey: m.idem.value,
});

const acquire = fc
  .record({ resource, ttl: ttlMs, holder, wait: fc.boolean(), waitMs: fc.integer({ min: 0, max: 1500 }), session: sometimes(leaseRef, 20) })
  .map((r): Msg => {
    // On a session the TTL must be unset (the session's lasts); session id 0 means no session.
    const onSession = r.session !== undefined && r.session.value.$lease.variant !== "zero";
    const ttl = r.session ? undefined : r.ttl.value;
    return {
      message: {
        resource: r.resource.value,
        ttl: ttl === undefined ? undefined : duration(ttl),
        holder: r.holder.value,
        wait: r.wait,
        // A waiter always has a bound here, so that no call waits past the answer bound.
        waitTimeout: r.wait ? duration(r.waitMs) : undefined,
        sessionId: r.session?.value,
      },
      hopeless: all(r.resource, r.holder) || (onSession ? r.session!.hopeless : r.session !== undefined || r.ttl.hopeless),
    };
  });

/** The resource a mutation writes: mostly its token's own (else nearly every write is refused for the mismatch). */
const mutationResource: fc.Arbitrary<Odd<unknown>> = fc.oneof(
  { weight: 7, arbitrary: good(fc.constant({ $sameAsToken: true })) },
  { weight: 3, arbitrary: resource },
);

const put = fc.record({ resource: mutationResource, key, value, m: mutation }).map(
  (r): Msg => ({
    message: { resource: r.resource.value, key: r.key.value, value: r.value.value, mutation: mutationOf(r.m) },
    hopeless: all(r.resource, r.key, r.value, r.m.token, r.m.mode, r.m.idem),
  }),
);
const del = fc.record({ resource: mutationResource, key, m: mutation }).map(
  (r): Msg => ({
    message: { resource: r.resource.value, key: r.key.value, mutation: mutationOf(r.m) },
    hopeless: all(r.resource, r.key, r.m.token, r.m.mode, r.m.idem),
  }),
);
const txnOp = fc.oneof(
  fc.record({ key, value }).map((o) => ({ op: { case: "put", value: { key: o.key.value, value: o.value.value } }, hopeless: all(o.key, o.value) })),
  key.map((k) => ({ op: { case: "delete", value: { key: k.value } }, hopeless: k.hopeless })),
);
const txn = fc
  .record({
    resource: mutationResource,
    // More than the default limit of 64 operations is out of range; repeated keys are the caller's mistake.
    ops: fc.oneof({ weight: 9, arbitrary: fc.array(txnOp, { minLength: 0, maxLength: 6 }) }, { weight: 1, arbitrary: fc.array(txnOp, { minLength: 65, maxLength: 70 }) }),
    m: mutation,
  })
  .map(
    (r): Msg => ({
      message: { resource: r.resource.value, ops: r.ops.map((o) => ({ op: o.op })), mutation: mutationOf(r.m) },
      hopeless: all(r.resource, r.m.token, r.m.mode, r.m.idem, ...r.ops) || r.ops.length > 64,
    }),
  );

const byResource = resource.map((r): Msg => ({ message: { resource: r.value }, hopeless: r.hopeless }));
const get = fc.record({ resource, key }).map((r): Msg => ({ message: { resource: r.resource.value, key: r.key.value }, hopeless: all(r.resource, r.key) }));
const range = fc
  .record({
    resource,
    prefix: fc.oneof(good(fc.constantFrom("", "k", "dir/")), bad(fc.constantFrom("p".repeat(1025), "\u0000"))),
    pageSize: fc.oneof(good(fc.integer({ min: 0, max: 1000 })), bad(fc.constantFrom(-1, -(2 ** 31)))),
    pageToken: fc.oneof({ weight: 5, arbitrary: good(fc.constant("")) }, { weight: 1, arbitrary: bad(fc.constantFrom("garbage", "!!!", "AAAA")) }),
    keysOnly: fc.boolean(),
  })
  .map(
    (r): Msg => ({
      message: { resource: r.resource.value, prefix: r.prefix.value, pageSize: r.pageSize.value, pageToken: r.pageToken.value, keysOnly: r.keysOnly },
      hopeless: all(r.resource, r.prefix, r.pageSize, r.pageToken),
    }),
  );
const renew = leaseRef.map((l): Msg => ({ message: { leaseId: l.value }, hopeless: l.hopeless }));
const release = tokenRef.map((t): Msg => ({ message: { token: t.value }, hopeless: t.hopeless }));
const openSession = fc.record({ ttl: ttlMs, holder }).map(
  (r): Msg => ({ message: { ttl: r.ttl.value === undefined ? undefined : duration(r.ttl.value), holder: r.holder.value }, hopeless: all(r.ttl, r.holder) }),
);
const closeSession = leaseRef.map((l): Msg => ({ message: { sessionId: l.value }, hopeless: l.hopeless }));
const empty = fc.constant<Msg>({ message: {}, hopeless: false });
const keepAliveMessage = fc.oneof(
  leaseRef.map((l) => ({ message: { leaseId: l.value }, hopeless: false })),
  fc.array(leaseRef, { minLength: 1, maxLength: 4 }).map((ls) => ({ message: { leaseIds: ls.map((l) => l.value) }, hopeless: false })),
);
const healthService = fc.oneof(
  good(fc.constantFrom("", "fencekeeper.v1.LeaseService", "fencekeeper.v1.FencedStoreService", "no.such.Service")),
  bad(fc.constantFrom(BAD_UTF8, "\u0000", "s".repeat(300))),
);
const healthCheck = healthService.map((s): Msg => ({ message: { service: s.value }, hopeless: false }));
const reflectionMessage = fc.oneof(
  fc.constant({ messageRequest: { case: "listServices", value: "" } }),
  fc
    .constantFrom("fencekeeper.v1.LeaseService", "fencekeeper.v1.FencingToken", "no.such.Symbol", "", BAD_UTF8)
    .map((s) => ({ messageRequest: { case: "fileContainingSymbol", value: s } })),
  fc.constantFrom("fencekeeper/v1/lease.proto", "nope.proto", "").map((s) => ({ messageRequest: { case: "fileByFilename", value: s } })),
);

// Each write of a Batch, and each operation of a LeaseBatch, is answered on its own: a bad one is its own
// answer, never the call's, so these calls are never hopeless as a whole.
const batch = fc
  .array(fc.oneof(put.map((w) => ({ write: { case: "put", value: w.message } })), del.map((w) => ({ write: { case: "delete", value: w.message } }))), { minLength: 0, maxLength: 5 })
  .map((writes): Msg => ({ message: { writes }, hopeless: false }));
const leaseBatch = fc
  .array(fc.oneof(acquire.map((a) => ({ op: { case: "acquire", value: a.message } })), release.map((r) => ({ op: { case: "release", value: r.message } }))), { minLength: 0, maxLength: 5 })
  .map((ops): Msg => ({ message: { ops }, hopeless: false }));
const listResources = fc
  .record({
    // A prefix is checked as a name, but may be empty (every resource).
    prefix: fc.oneof({ weight: 4, arbitrary: good(fc.constantFrom("", "fz/")) }, { weight: 2, arbitrary: resource.filter((r) => r.value !== "") }),
    pageSize: fc.oneof(good(fc.integer({ min: 0, max: 100 })), bad(fc.constantFrom(-1, -(2 ** 31)))),
    pageToken: fc.oneof({ weight: 5, arbitrary: good(fc.constant("")) }, { weight: 1, arbitrary: bad(fc.constantFrom("garbage", "AAAA")) }),
  })
  .map((r): Msg => ({ message: { prefix: r.prefix.value, pageSize: r.pageSize.value, pageToken: r.pageToken.value }, hopeless: all(r.prefix, r.pageSize, r.pageToken) }));
const proclaim = fc.record({ token: tokenRef, value }).map((r): Msg => ({ message: { token: r.token.value, value: r.value.value }, hopeless: all(r.token, r.value) }));
const acquireAll = fc
  .record({ resources: fc.array(resource, { minLength: 1, maxLength: 4 }), ttl: ttlMs, holder, wait: fc.boolean(), waitMs: fc.integer({ min: 0, max: 1500 }) })
  .map(
    (r): Msg => ({
      message: {
        resources: r.resources.map((x) => x.value),
        ttl: r.ttl.value === undefined ? undefined : duration(r.ttl.value),
        holder: r.holder.value,
        wait: r.wait,
        waitTimeout: r.wait ? duration(r.waitMs) : undefined,
      },
      hopeless: all(r.ttl, r.holder, ...r.resources),
    }),
  );

/** A message of each method, as the arbitrary of its request. */
const MESSAGES: Record<Method, fc.Arbitrary<{ messages: unknown[]; hopeless: boolean }>> = {
  Acquire: one(acquire),
  Renew: one(renew),
  Release: one(release),
  Describe: one(byResource),
  OpenSession: one(openSession),
  CloseSession: one(closeSession),
  ListTokenKeys: one(empty),
  // On a stream one bad lease id is that lease's answer, never the stream's: the stream is never hopeless.
  KeepAlive: fc.array(keepAliveMessage, { minLength: 0, maxLength: 4 }).map((ms) => ({ messages: ms.map((m) => m.message), hopeless: false })),
  Observe: one(byResource),
  Put: one(put),
  Get: one(get),
  Delete: one(del),
  Txn: one(txn),
  Range: one(range),
  GetFence: one(byResource),
  Batch: one(batch),
  ListResources: one(listResources),
  LiftLockDelay: one(byResource),
  Proclaim: one(proclaim),
  LeaseBatch: one(leaseBatch),
  AcquireAll: one(acquireAll),
  HealthCheck: one(healthCheck),
  HealthList: one(empty),
  HealthWatch: one(healthCheck),
  Reflection: fc.array(reflectionMessage, { minLength: 0, maxLength: 3 }).map((messages) => ({ messages, hopeless: false })),
  ReflectionAlpha: fc.array(reflectionMessage, { minLength: 0, maxLength: 3 }).map((messages) => ({ messages, hopeless: false })),
};
function one(a: fc.Arbitrary<Msg>) {
  return a.map((m) => ({ messages: [m.message], hopeless: m.hopeless }));
}

// --- bytes and frames ---------------------------------------------------------------------------------

const fraction = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fraction, xor: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fraction }),
  fc.record({ kind: fc.constant("insert" as const), at: fraction, bytes: fc.array(fc.nat({ max: 255 }), { minLength: 1, maxLength: 6 }) }),
  fc.record({
    kind: fc.constant("replace" as const),
    bytes: fc.oneof(
      fc.constantFrom<number[]>([0x0e], [0xff, 0xff, 0xff], [0xff, 0xff, 0xff, 0xff, 0xff], [0x0a, 0x05, 0x61], [0x0f, 0x01], [0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
      fc.array(fc.nat({ max: 255 }), { maxLength: 24 }),
    ),
  }),
  fc.record({ kind: fc.constant("prefix" as const), bytes: fc.constantFrom<number[]>([0xa8], [0xff], [0x00], [0xef, 0xbb, 0xbf]) }),
);

/**
 * Frame mutations that no server may take as a request. Unknown flag bits are not among them: the gRPC
 * spec allows only 0 and 1, but connect (which serves Health and reflection) reads bit 0 alone.
 */
export const HOPELESS_FRAMES = new Set<FrameMutation>(["length-long", "length-short", "compressed-no-encoding", "gzip-broken", "trailing-garbage"]);

const frameMutation = fc.oneof(
  { weight: 14, arbitrary: fc.constant<FrameMutation>("none") },
  {
    weight: 6,
    arbitrary: fc.constantFrom<FrameMutation>(
      "length-long",
      "length-short",
      "compressed-no-encoding",
      "gzip",
      "gzip-broken",
      "trailing-garbage",
      "two-messages",
      "unknown-flags",
      "empty-body",
      "chunked",
    ),
  },
);
const jsonMutation = fc.oneof(
  { weight: 14, arbitrary: fc.constant<JsonMutation>("none") },
  { weight: 4, arbitrary: fc.constantFrom<JsonMutation>("unknown-field", "wrong-type", "lone-surrogate-escape", "deep-nesting", "not-json", "bad-byte-prefix", "null") },
);

const WIRES: Wire[] = ["grpc", "grpc-json", "grpc-web", "grpc-web-json", "connect-proto", "connect-json"];
/** What each wire can carry: bidi streams need HTTP/2 (gRPC); Connect here is unary or server streams. */
function wiresFor(method: Method): Wire[] {
  const kind = METHODS[method].kind;
  if (kind === "bidi") return ["grpc", "grpc-json"];
  return WIRES;
}

const callers = fc.oneof({ weight: 8, arbitrary: fc.constantFrom<Caller>("alice", "bob") }, { weight: 1, arbitrary: fc.constantFrom<Caller>("anonymous", "forged") });

// Weights: the methods that write or touch leases most, the rest less. Every method has one (a Record,
// so that a method added to METHODS without a weight does not compile).
const METHOD_WEIGHTS: Record<Method, number> = {
  Put: 10,
  Txn: 6,
  Delete: 5,
  Batch: 3,
  Acquire: 6,
  Release: 4,
  Renew: 5,
  KeepAlive: 5,
  LeaseBatch: 3,
  AcquireAll: 2,
  Proclaim: 2,
  Observe: 3,
  Describe: 3,
  ListResources: 2,
  LiftLockDelay: 1,
  Get: 3,
  Range: 2,
  GetFence: 2,
  OpenSession: 2,
  CloseSession: 2,
  ListTokenKeys: 1,
  HealthCheck: 3,
  HealthList: 1,
  HealthWatch: 1,
  Reflection: 1,
  ReflectionAlpha: 1,
};
const method = fc.oneof(...(Object.entries(METHOD_WEIGHTS) as [Method, number][]).map(([m, weight]) => ({ weight, arbitrary: fc.constant(m) })));

/** One case: the method first, then what fits it. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = method.chain((m) =>
  fc
    .record({
      server: fc.constantFrom<0 | 1>(0, 1),
      caller: callers,
      wire: fc.constantFrom(...wiresFor(m)),
      body: MESSAGES[m],
      bytes: sometimes(byteMutation, 15),
      frame: frameMutation,
      json: jsonMutation,
      ending: endingFor(m),
      timeout: sometimes(fc.integer({ min: 50, max: 3000 }), 20),
    })
    .map((r): FuzzCase => {
      const isJson = r.wire.endsWith("json");
      const kind = METHODS[m].kind;
      // Connect frames its streams (envelopes) but not its unary calls: those only take compression.
      const connectUnary = r.wire.startsWith("connect") && kind === "unary";
      const frame = connectUnary && !["gzip", "gzip-broken", "chunked"].includes(r.frame) ? "none" : r.frame;
      const json = isJson ? r.json : "none";
      // A stream that is never half-closed ends only by its deadline: it always has one.
      const timeoutMs = r.ending === "deadline" ? (r.timeout ?? 500) : (r.timeout ?? undefined);
      const unaryExtra = kind === "unary" && frame === "two-messages";
      return {
        server: r.server,
        caller: r.caller,
        method: m,
        wire: r.wire,
        messages: r.body.messages,
        bytes: r.bytes ?? undefined,
        frame,
        json,
        ending: r.ending,
        timeoutMs,
        // A frame that lies, or one message too many on a unary call, can never be served; for streams
        // only what breaks the first message is certain. Whether a JSON mutation breaks the message
        // depends on the message: the engine says (Encoded.jsonBroken).
        // A byte mutation may mend what the message broke (a too-long name cut into an unknown field).
        hopeless: (kind !== "bidi" && r.body.hopeless && r.bytes === undefined) || (HOPELESS_FRAMES.has(frame) && r.body.messages.length > 0) || unaryExtra,
      };
    }),
);

function endingFor(m: Method): fc.Arbitrary<Ending> {
  switch (METHODS[m].kind) {
    case "unary":
      return fc.oneof({ weight: 12, arbitrary: fc.constant<Ending>("half-close") }, { weight: 1, arbitrary: fc.constantFrom<Ending>("cancel-now", "deadline") });
    case "server":
      // An Observe of a resource nobody changes never ends by itself.
      return fc.constantFrom<Ending>("cancel-now", "cancel-after-first", "deadline");
    case "bidi":
      return fc.oneof(
        { weight: 6, arbitrary: fc.constant<Ending>("half-close") },
        { weight: 2, arbitrary: fc.constantFrom<Ending>("cancel-now", "cancel-after-first", "deadline") },
        { weight: 2, arbitrary: fc.constant<Ending>("bad-then-more") },
      );
  }
}

/** The cases of one batch: the same seed and batch number always give the same cases. */
export function batchOf(seed: number, batch: number, size: number): FuzzCase[] {
  return fc.sample(fuzzCase, { seed: (seed + Math.imul(batch, 0x9e3779b1)) | 0, numRuns: size });
}
