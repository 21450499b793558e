// Fencing your own Redis keys (docs/redis.md). Each resource has one fence key,
// `fencekeeper:fence:{<resource>}`, holding the greatest generation of that resource that has written
// through these helpers. Every fenced write is ONE Lua script: it compares the token's generation with the
// fence and, in the same atomic step (Redis runs a script to its end before any other command), writes
// the data and raises the fence; a stale generation writes nothing and gets the fence back. A DEL leaves
// the fence in place, so a stale holder cannot write the key back.
//
// Built on ioredis (https://github.com/redis/ioredis): its defineCommand sends the script whole (EVAL) the
// first time on a connection, EVALSHA after, and EVAL again by itself when the server has lost the script
// (NOSCRIPT: after a restart, a failover, SCRIPT FLUSH), and
// the same helper works on a single server and on Redis Cluster (ioredis's Cluster routes the script to the
// slot of its keys). The SDK does not depend on ioredis at runtime: the helpers take the caller's Redis or
// Cluster object, typed by what they use of it.
//
// In a Cluster, a script's keys must share one slot: a data key must carry the resource's hash tag
// (`{<resource>}`, see resourceTag()) as the fence key does, and the helpers refuse one that does not
// before any command, on a single server too, so that keys stay fenced when the data moves to a Cluster.
import type { FenceStore, FenceVerdict } from "./fence-store.js";
import type { Token } from "./token.js";
import { checkWriterToken, type FencedOutcome, type TokenCheck } from "./fenced-write.js";

/** What the helpers need of ioredis: `Redis` and `Cluster` both have it. */
export interface RedisScripting {
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
}

/** A data value, as ioredis takes it. */
export type RedisValue = string | Buffer | number;


/** The holder's token: its resource's fence is the one compared, its generation the one compared with it. */
export type RedisFenced = { token: Token } & TokenCheck;

export type RedisFencedSet = RedisFenced & {
  key: string;
  value: RedisValue;
  /**
   * - "always" (default): SET, whether the key exists or not.
   * - "ifExists": only over an existing key (SET ... XX); a missing one is "notFound".
   * - "ifMissing": only where there is none (SET ... NX); an existing one is "exists".
   */
  when?: "always" | "ifExists" | "ifMissing";
  /** An expiry for the data key (never for the fence key), in milliseconds (SET ... PX). */
  px?: number;
};

export type RedisFencedDel = RedisFenced & { key: string };

export type RedisFencedHset = RedisFenced & { key: string; fields: Readonly<Record<string, RedisValue>> };

/** One write of a fencedMulti; all of them apply, or none. */
export type RedisWriteOp =
  | { set: string; value: RedisValue; px?: number }
  | { del: string }
  | { hset: string; fields: Readonly<Record<string, RedisValue>> };

export type RedisFencedMulti = RedisFenced & { ops: readonly RedisWriteOp[] };

/**
 * The outcome of a fenced Redis write (client/fenced-write.ts). Here notFound is a DEL (or a SET
 * "ifExists") that found no such key; exists a SET "ifMissing" that found one (fence: the resource's, null
 * when none yet); otherResource a key that carries another resource's hash tag (resource: that tag).
 */
export type RedisFencedOutcome = FencedOutcome;

/** The fence key of a resource. Its hash tag is the resource, so the resource's data keys can share its slot. */
export function fenceKey(resource: string): string {
  return `fencekeeper:fence:${resourceTag(resource)}`;
}

/**
 * The hash tag every data key of the resource must carry, e.g. `orders:${resourceTag("orders")}:17` is
 * `orders:{orders}:17`. The first `{...}` of a key is its tag (Redis hashes only that), so put it first.
 */
export function resourceTag(resource: string): string {
  return `{${resource}}`;
}

/** Redis's hash tag of a key: what is between its first `{` and the first `}` after it, if not empty. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf("{");
  if (open < 0) return undefined;
  const close = key.indexOf("}", open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

// The scripts. KEYS[1] is the fence key, ARGV[1] the generation in decimal. Generations are int64 and Lua
// has doubles (exact to 2^53 only), so they are compared as decimal strings: canonical (no sign, no
// leading zero), so a shorter one is smaller, and between equal lengths the byte order is the numeric one.
// A fence key holding anything else is an error, not a fence to compare with. Every check comes before the
// first write: a script stopped by an error keeps the writes it already made.
const PRELUDE = `
local function newer(a, b) if #a ~= #b then return #a > #b end return a > b end
local gen = ARGV[1]
local fence = redis.call('GET', KEYS[1])
if fence and not string.match(fence, '^[1-9][0-9]*$') then
  return redis.error_reply('fencekeeper: the fence key ' .. KEYS[1] .. ' does not hold a generation')
end
if fence and newer(fence, gen) then return {'stale', fence} end
local function raise() redis.call('SET', KEYS[1], gen) return {'applied', gen} end
local function wrongtype(key, want)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE fencekeeper: ' .. key .. ' holds a ' .. t .. ', not a ' .. want)
  end
end
`;

const SCRIPTS = {
  // KEYS[2] the key; ARGV[2] the value, ARGV[3] "always" | "ifExists" | "ifMissing", ARGV[4] px or "".
  fencekeeperFencedSet: {
    numberOfKeys: 2,
    lua: `${PRELUDE}
local exists = redis.call('EXISTS', KEYS[2]) == 1
if ARGV[3] == 'ifExists' and not exists then return {'notFound'} end
if ARGV[3] == 'ifMissing' and exists then return {'exists', fence or ''} end
if ARGV[4] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4]) else redis.call('SET', KEYS[2], ARGV[2]) end
return raise()`,
  },
  // KEYS[2] the key.
  fencekeeperFencedDel: {
    numberOfKeys: 2,
    lua: `${PRELUDE}
if redis.call('DEL', KEYS[2]) == 0 then return {'notFound'} end
return raise()`,
  },
  // KEYS[2] the hash; ARGV[2..] field, value, field, value...
  fencekeeperFencedHset: {
    numberOfKeys: 2,
    lua: `${PRELUDE}
local bad = wrongtype(KEYS[2], 'hash') if bad then return bad end
redis.call('HSET', KEYS[2], unpack(ARGV, 2))
return raise()`,
  },
  // KEYS[2..] the keys of the ops, in order; ARGV[2..] per op: its kind, its count of arguments, them.
  // (numberOfKeys is not fixed: the first argument is the number of keys.)
  fencekeeperFencedMulti: {
    lua: `${PRELUDE}
local ops, a = {}, 2
for k = 2, #KEYS do
  local kind, n = ARGV[a], tonumber(ARGV[a + 1])
  ops[#ops + 1] = {kind, KEYS[k], {unpack(ARGV, a + 2, a + 1 + n)}}
  a = a + 2 + n
end
for _, op in ipairs(ops) do
  if op[1] == 'hset' then local bad = wrongtype(op[2], 'hash') if bad then return bad end end
end
for _, op in ipairs(ops) do
  if op[1] == 'set' then redis.call('SET', op[2], unpack(op[3]))
  elseif op[1] == 'del' then redis.call('DEL', op[2])
  else redis.call('HSET', op[2], unpack(op[3])) end
end
return raise()`,
  },
  // FenceStore.admit: the check and the raise, no data.
  fencekeeperFenceAdmit: {
    numberOfKeys: 1,
    lua: `${PRELUDE}
return raise()`,
  },
} as const;

type ScriptName = keyof typeof SCRIPTS;
type Reply = [string, string?];

/** Sets a key if no newer generation of the token's resource has written. */
export async function fencedSet(redis: RedisScripting, w: RedisFencedSet): Promise<RedisFencedOutcome> {
  const refused = checkToken(w) ?? checkKeys(w.token.resource, [w.key]);
  if (refused) return refused;
  const when = w.when ?? "always";
  if (!["always", "ifExists", "ifMissing"].includes(when)) throw new RangeError(`when: "${when}" is not one of "always", "ifExists", "ifMissing"`);
  return run(redis, "fencekeeperFencedSet", [fenceKey(w.token.resource), w.key], [generation(w.token), w.value, when, px(w.px)]);
}

/** Deletes a key if no newer generation of the token's resource has written; the fence stays. */
export async function fencedDel(redis: RedisScripting, w: RedisFencedDel): Promise<RedisFencedOutcome> {
  const refused = checkToken(w) ?? checkKeys(w.token.resource, [w.key]);
  if (refused) return refused;
  return run(redis, "fencekeeperFencedDel", [fenceKey(w.token.resource), w.key], [generation(w.token)]);
}

/** Sets fields of a hash (creating it) if no newer generation of the token's resource has written. */
export async function fencedHset(redis: RedisScripting, w: RedisFencedHset): Promise<RedisFencedOutcome> {
  const refused = checkToken(w) ?? checkKeys(w.token.resource, [w.key]);
  if (refused) return refused;
  return run(redis, "fencekeeperFencedHset", [fenceKey(w.token.resource), w.key], [generation(w.token), ...fieldArgs(w.fields)]);
}

/**
 * Several writes to keys of one resource, all in one script: all apply, or (stale) none. A key may appear
 * in several ops; they apply in order.
 */
export async function fencedMulti(redis: RedisScripting, w: RedisFencedMulti): Promise<RedisFencedOutcome> {
  if (w.ops.length === 0) throw new RangeError("fencedMulti needs at least one op");
  const keys = w.ops.map(opKey);
  const refused = checkToken(w) ?? checkKeys(w.token.resource, keys);
  if (refused) return refused;
  const args: RedisValue[] = [generation(w.token)];
  for (const op of w.ops) {
    const opArgs = "set" in op ? [op.value, ...(op.px === undefined ? [] : ["PX", px(op.px)])] : "hset" in op ? fieldArgs(op.fields) : [];
    args.push("set" in op ? "set" : "hset" in op ? "hset" : "del", opArgs.length, ...opArgs);
  }
  return run(redis, "fencekeeperFencedMulti", [fenceKey(w.token.resource), ...keys], args, true);
}

/**
 * A FenceStore (client/fence-store.ts) on Redis: the resource's fence key, the same one the fenced writes
 * above compare with, so an admitted generation also fences them.
 */
export function redisFenceStore(redis: RedisScripting): FenceStore {
  return {
    async admit(resource: string, gen: bigint): Promise<FenceVerdict> {
      checkGeneration(gen);
      const out = await run(redis, "fencekeeperFenceAdmit", [fenceKey(resource)], [gen.toString()]);
      if (out.status === "applied") return { status: "admitted", fence: out.fence };
      if (out.status === "stale") return out;
      throw new Error(`unexpected answer of the fence script: ${JSON.stringify(out)}`);
    },
  };
}

async function run(redis: RedisScripting, name: ScriptName, keys: string[], args: RedisValue[], variadic = false): Promise<RedisFencedOutcome> {
  const target = redis as unknown as Record<string, (...a: unknown[]) => Promise<Reply>>;
  // ioredis adds the command to the object (and keeps the script's SHA1 for EVALSHA); once per object.
  if (typeof target[name] !== "function") {
    const s = SCRIPTS[name];
    redis.defineCommand(name, "numberOfKeys" in s ? { lua: s.lua, numberOfKeys: s.numberOfKeys } : { lua: s.lua });
  }
  const reply = variadic ? await target[name](keys.length, ...keys, ...args) : await target[name](...keys, ...args);
  const [status, fence] = reply.map((r) => (Buffer.isBuffer(r) ? r.toString() : r)) as Reply;
  switch (status) {
    case "applied":
    case "stale":
      return { status, fence: BigInt(fence!) };
    case "notFound":
      return { status };
    case "exists":
      return { status, fence: fence ? BigInt(fence) : null };
  }
  throw new Error(`unexpected answer of the fence script: ${JSON.stringify(reply)}`);
}

function opKey(op: RedisWriteOp): string {
  return "set" in op ? op.set : "hset" in op ? op.hset : op.del;
}

/**
 * Every data key must carry the resource's hash tag as its first `{...}` (see the file's header). A key
 * tagged otherwise belongs to another resource: "otherResource", before any command. The whole
 * `{<resource>}` is compared, not only Redis's tag: of a name with a `}` in it ("a}b"), Redis hashes only
 * what comes before ("a"), which "a}c" shares.
 */
function checkKeys(resource: string, keys: readonly string[]): RedisFencedOutcome | undefined {
  if (hashTag(fenceKey(resource)) === undefined) {
    throw new RangeError(`resource "${resource}" begins with "}", so it cannot be a Redis hash tag: fence it in another store`);
  }
  for (const key of keys) {
    if (typeof key !== "string") throw new TypeError(`data keys are strings; got ${typeof key}`);
    if (key.startsWith("fencekeeper:fence:")) throw new RangeError(`"${key}" is a fence key: the helper writes it, a caller may not`);
    const own = hashTag(key);
    if (own === undefined) {
      throw new RangeError(
        `key "${key}" has no hash tag: a key fenced by resource "${resource}" must contain "${resourceTag(resource)}" ` +
          `(as its first {...}), so that it shares the fence key's slot in a Redis Cluster`,
      );
    }
    if (!key.startsWith(resourceTag(resource), key.indexOf("{"))) return { status: "otherResource", resource: own };
  }
  return undefined;
}

function checkToken(w: RedisFenced): RedisFencedOutcome | undefined {
  const refused = checkWriterToken(w, "resource");
  checkGeneration(w.token.generation);
  return refused;
}

/** Generations are etcd revisions: positive int64. The scripts compare them as canonical decimals. */
function checkGeneration(gen: bigint): void {
  if (typeof gen !== "bigint" || gen < 1n || gen > 2n ** 63n - 1n) throw new RangeError(`generation ${String(gen)} is not a positive int64`);
}

function generation(t: Token): string {
  return t.generation.toString();
}

function px(ms: number | undefined): string {
  if (ms === undefined) return "";
  if (!Number.isSafeInteger(ms) || ms < 1) throw new RangeError(`px: ${ms} is not a positive whole number of milliseconds`);
  return String(ms);
}

function fieldArgs(fields: Readonly<Record<string, RedisValue>>): RedisValue[] {
  const entries = Object.entries(fields);
  if (entries.length === 0) throw new RangeError("an HSET needs at least one field");
  return entries.flat();
}
