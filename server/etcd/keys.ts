// The etcd key layout and the formats of the values in it. This module alone knows how fencekeeper's
// state is laid out in etcd, and how ownership is told from it.
//
// Under the configured prefix P, each resource R (URI-encoded, so it never contains "/") has:
//   P r/R/owner                         the exclusive holder, attached to its lease (its own, or its
//                                       session's). Its create revision is the generation: the revision
//                                       of the grant. Its value is encodeOwner's (label, nonce, and the
//                                       published value, which Proclaim rewrites in place).
//   P r/R/owner-delay                   with a lock-delay: the holder's delay, put by its grant on the
//                                       acquisition's delay lease, which outlives the owner key's lease
//                                       by the delay (delayLeaseOf below). While it exists nobody is
//                                       granted R. Its value is encodeLockDelay's; its create revision is
//                                       the holder's generation. It sorts between the owner key and the
//                                       line, so that Observe's one watch sees it.
//   P r/R/q/<lease id, 16 hex digits><nonce>
//                                       an exclusive acquisition waiting in line, attached to the lease
//                                       that keeps its place (its own, or on a session a place lease of
//                                       its own); the line is ordered by create revision, and a grant
//                                       deletes the waiter's key
//   P r/R/q/s/<lease id><nonce>         a shared acquisition waiting in line (shared.ts). Inside the line,
//                                       so that whatever reads the whole line sees it; after every
//                                       exclusive waiter's key ([q/, q/s/) holds those alone: lease ids
//                                       are hex digits, which sort before "s")
//   P r/R/s/<lease id, 16 hex digits>   a shared holder, attached to its lease (a lease holds a resource
//                                       once at most, so its id names the holding). Its create revision is
//                                       the generation, as the owner key's is for the exclusive holder
//   P r/R/issued                        rewritten by every grant, so its mod revision is the greatest
//                                       generation issued (its value is not read)
//   P r/R/fence                         the greatest generation accepted by the store, 20 decimal digits
//   P r/R/d/<key>                       the fenced store's values
//   P r/R/usage                         with --max-bytes-per-resource: the bytes (keys and values) of
//                                       R's store entries, decimal; rewritten by every write of R's
//                                       entries in the write's transaction (committer.ts). With
//                                       authentication on, a space and R's payer follow: the tag of the
//                                       principal R's bytes are charged to (principalTag). It sorts
//                                       after the holders, out of Observe's watch
// and, for all resources:
//   P i/<sha-256 of the idempotency key, hex>   idempotency records, on shared leases of 24 h and more;
//                                                with authentication on, the hash is of "principal", NUL, the
//                                                caller's name, NUL and the key (see store/idempotency.ts)
//   P s/<lease id, 16 hex digits>                one key per session, attached to the session's lease
//   P k/signing                                  the key that signs new tokens (its id, and the private key)
//   P k/public/<key id>                          every signing key's public key, raw: kept, so that tokens
//                                                signed before a rotation still verify
//   P limits-probe                               never written: the start's probe of etcd's limits reads it
//                                                and writes it under a compare that fails (limits-probe.ts)
//   P b/<lease id, 16 hex digits>                with authentication on: the principal that owns the lease
//                                                (an acquisition's or a session's), attached to it; its
//                                                value is the principal's name, compared byte for byte
//   P p/<principal hash>/<lease id>              the same leases, listed by principal, to count them
//   P c/<principal tag>/<slot, 8 hex digits>      with authentication on: a lease's slot of its principal's
//                                                --max-leases-per-caller, attached to it (capSlotsPrefix)
//   P w/<principal tag>                          with --max-store-bytes-per-caller: the bytes of the store
//                                                entries of the resources whose payer the principal is,
//                                                decimal; rewritten in the transactions that change them
//                                                (committer.ts, store/store-payer.ts)
//   P u/<lease id, 16 hex digits>                the bytes the acquisitions of the lease store (budgets/lease-bytes.ts),
//                                                decimal, attached to it: they come free when the lease ends
//   P x/<lease id, 16 hex digits>                a lease whose holding was preempted (lease/preemption.ts),
//                                                attached to it: the resource, the preempted generation, the
//                                                preemptor's principal and generation (encodePreempted). Every
//                                                replica watches the prefix, so that a renewal reads nothing
//                                                from etcd to refuse it
// While a preemption hands a resource over (between its two transactions), its lock-delay key holds the
// value PREEMPTING on the preemptor's lease: every grant already waits for that key, so waiters stay
// behind the preemptor without a rule of their own.
//
// Only a grant writes an owner key, and only the first in line is granted: a line key whose Acquire
// went away (a waiter cut off while etcd was down) can block the line until its lease ends, but it
// never becomes an owner. Generations are written fixed-width so that etcd's byte-wise value
// comparisons order them as numbers.
import { createHash } from "node:crypto";
import type { ICompare, IKeyValue } from "etcd3";
import { cmp } from "./ops.js";

const GENERATION_DIGITS = 20;

export class KeyLayout {
  constructor(readonly prefix: string) {
    if (!prefix.endsWith("/")) throw new Error(`key prefix must end with "/", got ${JSON.stringify(prefix)}`);
  }

  private resourceRoot(resource: string): string {
    return `${this.prefix}r/${encodeURIComponent(resource)}/`;
  }

  /** Where the keys of the resources whose names start with namePrefix lie: [start, end). */
  resourcesRange(namePrefix: string): [Buffer, Buffer] {
    const start = Buffer.from(`${this.prefix}r/${encodeURIComponent(namePrefix)}`);
    return [start, prefixEnd(start)];
  }

  /** The resource any key under r/ belongs to; undefined for any other key. */
  resourceOfKey(key: Buffer): string | undefined {
    const rest = key.toString("latin1");
    const root = `${this.prefix}r/`;
    if (!rest.startsWith(root)) return undefined;
    const slash = rest.indexOf("/", root.length);
    if (slash < 0) return undefined;
    try {
      return decodeURIComponent(rest.slice(root.length, slash));
    } catch {
      return undefined;
    }
  }

  /** Past every key of a resource: where a scan of resources goes on after it. */
  /** The first key a resource's keys can have: where a listing that stops before it starts again. */
  resourceStart(resource: string): Buffer {
    return Buffer.from(this.resourceRoot(resource));
  }

  afterResource(resource: string): Buffer {
    return prefixEnd(Buffer.from(this.resourceRoot(resource)));
  }

  linePrefix(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}q/`);
  }

  lineKey(resource: string, leaseId: bigint): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}q/${hex16(leaseId)}`);
  }

  /** The shared acquisitions waiting in line: a part of the line, after every exclusive waiter. */
  sharedLinePrefix(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}q/s/`);
  }

  sharedLineKey(resource: string, leaseId: bigint): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}q/s/${hex16(leaseId)}`);
  }

  /** The shared holders of a resource. */
  sharedPrefix(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}s/`);
  }

  sharedKey(resource: string, leaseId: bigint): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}s/${hex16(leaseId)}`);
  }

  // The ranges below are where the order keys sort in is relied on; callers take them from here.

  /** The whole line, exclusive and shared waiters: [q/, past q/). */
  lineRange(resource: string): [Buffer, Buffer] {
    const line = this.linePrefix(resource);
    return [line, prefixEnd(line)];
  }

  /** The exclusive waiters alone: [q/, q/s/), since their keys' lease ids are hex digits, which sort before "s". */
  exclusiveLineRange(resource: string): [Buffer, Buffer] {
    return [this.linePrefix(resource), this.sharedLinePrefix(resource)];
  }

  /**
   * The places of a lease (an acquisition's, or a session's) in the line, exclusive and shared: each
   * waiter's key is its lease's id, fixed-width, then a nonce, so the id's keys are those that start with it.
   */
  linePlacesOf(resource: string, leaseId: bigint): [Buffer, Buffer][] {
    return [this.lineKey(resource, leaseId), this.sharedLineKey(resource, leaseId)].map((p) => [p, prefixEnd(p)]);
  }

  /**
   * Who holds or waits for a resource, in one range: the owner key, the lock-delay key, the line and the
   * shared holders sort in this order ("owner" < "owner-delay" < "q/" < "s/"), with nothing else of the
   * resource between them ("fence", "issued" and "d/" sort before, "usage" after).
   */
  holdersRange(resource: string): [Buffer, Buffer] {
    return [this.ownerKey(resource), prefixEnd(this.sharedPrefix(resource))];
  }

  ownerKey(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}owner`);
  }

  lockDelayKey(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}owner-delay`);
  }

  issuedKey(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}issued`);
  }

  fenceKey(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}fence`);
  }

  usageKey(resource: string): Buffer {
    return Buffer.from(`${this.resourceRoot(resource)}usage`);
  }

  dataPrefix(resource: string, keyPrefix = ""): Buffer {
    return Buffer.concat([Buffer.from(`${this.resourceRoot(resource)}d/`), Buffer.from(keyPrefix, "utf8")]);
  }

  dataKey(resource: string, key: string): Buffer {
    return this.dataPrefix(resource, key);
  }

  /** The store key of an etcd data key of this resource. */
  storeKey(resource: string, etcdKey: Buffer): string {
    const root = this.dataPrefix(resource);
    return etcdKey.subarray(root.length).toString("utf8");
  }

  idempotencyKey(keyHash: string): Buffer {
    return Buffer.from(`${this.prefix}i/${keyHash}`);
  }

  sessionKey(sessionId: bigint): Buffer {
    return Buffer.from(`${this.prefix}s/${hex16(sessionId)}`);
  }

  signingKey(): Buffer {
    return Buffer.from(`${this.prefix}k/signing`);
  }

  /** The key the start's probe of etcd's limits reads, and compares so that its write never happens (limits-probe.ts). */
  limitsProbeKey(): Buffer {
    return Buffer.from(`${this.prefix}limits-probe`);
  }

  publicKeyPrefix(): Buffer {
    return Buffer.from(`${this.prefix}k/public/`);
  }

  publicKey(keyId: string): Buffer {
    return Buffer.from(`${this.prefix}k/public/${keyId}`);
  }

  bindingKey(leaseId: bigint): Buffer {
    return Buffer.from(`${this.prefix}b/${hex16(leaseId)}`);
  }

  /** The bytes a lease's acquisitions store (budgets/lease-bytes.ts), attached to the lease. */
  leaseBytesKey(leaseId: bigint): Buffer {
    return Buffer.from(`${this.prefix}u/${hex16(leaseId)}`);
  }

  /** The preempted leases (lease/preemption.ts), which every replica watches. */
  preemptedPrefix(): Buffer {
    return Buffer.from(`${this.prefix}x/`);
  }

  preemptedKey(leaseId: bigint): Buffer {
    return Buffer.from(`${this.prefix}x/${hex16(leaseId)}`);
  }

  /** The lease a preempted key names; undefined for any other key. */
  preemptedLeaseOf(key: Buffer): bigint | undefined {
    const m = /^x\/([0-9a-f]{16})$/.exec(key.subarray(this.prefix.length).toString("latin1"));
    return m ? BigInt(`0x${m[1]}`) : undefined;
  }

  /** Where a principal's leases are listed, under its tag. */
  principalLeasesPrefix(principal: string): Buffer {
    return Buffer.from(`${this.prefix}p/${principalTag(principal)}/`);
  }

  /** The bytes of store entries charged to the principal of this tag (principalTag). */
  callerStoreKey(tag: string): Buffer {
    return Buffer.from(`${this.prefix}w/${tag}`);
  }

  principalLeaseKey(principal: string, leaseId: bigint): Buffer {
    return Buffer.concat([this.principalLeasesPrefix(principal), Buffer.from(hex16(leaseId))]);
  }

  /** The resource whose holder key (its owner key, or a shared holder's key) `key` is; undefined for any other key. */
  heldResourceOf(key: Buffer): string | undefined {
    const prefix = Buffer.from(this.prefix);
    if (!key.subarray(0, prefix.length).equals(prefix)) return undefined;
    // A resource's name is percent-encoded in its keys: it holds no "/".
    const m = /^r\/([^/]*)\/(?:owner|s\/[0-9a-f]{16})$/.exec(key.subarray(prefix.length).toString("latin1"));
    if (!m) return undefined;
    try {
      return decodeURIComponent(m[1]);
    } catch {
      return undefined;
    }
  }

  /**
   * A principal's cap slots (--max-leases-per-caller): each lease or session of the principal holds one,
   * attached to it, so that etcd itself keeps the count exact across replicas and frees a slot when the
   * lease ends. Slot i of n is the key `${prefix}c/<hash>/<i, 8 hex digits>`.
   */
  capSlotsPrefix(principal: string): Buffer {
    return Buffer.from(`${this.prefix}c/${principalTag(principal)}/`);
  }

  capSlotKey(principal: string, slot: number): Buffer {
    return Buffer.concat([this.capSlotsPrefix(principal), Buffer.from(slot.toString(16).padStart(8, "0"))]);
  }
}

const hex16 = (id: bigint) => id.toString(16).padStart(16, "0");

/** The generation as a fixed-width value, comparable byte-wise in etcd. */
export function encodeGeneration(generation: bigint): Buffer {
  if (generation < 0n) throw new Error(`negative generation ${generation}`);
  return Buffer.from(generation.toString().padStart(GENERATION_DIGITS, "0"));
}

export function decodeGeneration(value: Buffer | undefined): bigint {
  if (!value || value.length === 0) return 0n;
  return BigInt(value.toString());
}

/** A principal's tag in keys and usage values: the first 16 hex digits of the SHA-256 of its name. */
export function principalTag(principal: string): string {
  return createHash("sha256").update(principal).digest("hex").slice(0, 16);
}

/** Stored bytes as kept in a usage key (a resource's, a lease's, a caller's), with the resource's payer's tag. */
export function encodeUsage(bytes: bigint, payer = ""): Buffer {
  const n = (bytes < 0n ? 0n : bytes).toString();
  return Buffer.from(payer ? `${n} ${payer}` : n);
}

/**
 * A usage key as read: its bytes (0 when absent), its mod revision (0 when absent), which pins it, and
 * the payer it names ("" when none).
 */
export function decodeUsage(kv: IKeyValue | undefined): { bytes: bigint; mod: bigint; payer: string } {
  if (!kv) return { bytes: 0n, mod: 0n, payer: "" };
  const m = /^(\d+)(?: ([0-9a-f]{16}))?$/.exec(kv.value.toString());
  return { bytes: m ? BigInt(m[1]) : 0n, mod: BigInt(kv.mod_revision), payer: m?.[2] ?? "" };
}

/** The end of etcd's range for every key that starts with prefix. */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // the whole keyspace
}

/** What the line key and the owner key of an acquisition say about it, besides their revisions. */
export interface HolderEntry {
  holder: string;
  /** A counting semaphore's permit or waiter: the most holders it allows (semaphore.ts); unset otherwise. */
  maxHolders?: number;
}

// A semaphore's values begin with maxHolders, every other holder's or waiter's with holder: `{"m` sorts
// after `{"h`, so one compare of a range's values tells whether any of them is a semaphore's
// (noSemaphoreIn below), which an uncapped shared grant checks without a read.
export function encodeHolder(e: HolderEntry): Buffer {
  return Buffer.from(JSON.stringify(e.maxHolders ? { maxHolders: e.maxHolders, holder: e.holder } : { holder: e.holder }));
}

/**
 * No key of [key, end) is a semaphore's holder or waiter (see encodeHolder). etcd fails a compare of
 * values on a range with no key in it: check that the range is empty first.
 */
export function noSemaphoreIn(key: Buffer, end: Buffer): ICompare {
  return { key, range_end: end, target: "Value", result: "Less", value: Buffer.from('{"i') };
}

/**
 * An owner key's value (a shared holder's key's too): the holder label, and the nonce of the Acquire that
 * wrote it, so that a call that cannot tell whether its grant committed can remove exactly its own owner
 * key later; then, when the acquisition published a value (AcquireRequest.value, Proclaim), a newline
 * and the value's raw bytes. JSON.stringify never writes a raw newline, so the first one ends the JSON.
 */
export interface OwnerEntry extends HolderEntry {
  nonce: string;
  principal?: string;
  value?: Uint8Array;
}

export function encodeOwner(e: OwnerEntry): Buffer {
  // maxHolders first, as encodeHolder puts it (noSemaphoreIn compares the values' beginnings).
  const head = Buffer.from(
    JSON.stringify({
      ...(e.maxHolders ? { maxHolders: e.maxHolders } : {}),
      holder: e.holder,
      nonce: e.nonce,
      ...(e.principal ? { principal: e.principal } : {}),
    }),
  );
  return e.value && e.value.byteLength > 0 ? Buffer.concat([head, NEWLINE, e.value]) : head;
}

const NEWLINE = Buffer.from("\n");

/** The holder of an owner key, as a token's parts: its generation is the key's create revision. */
export interface Owner {
  holder: string;
  /** The authenticated principal that acquired it; "" without authentication. */
  principal: string;
  generation: bigint;
  leaseId: bigint;
  /** The published value (encodeOwner); empty without one. */
  value: Uint8Array;
  /** The nonce of the Acquire that wrote it: Proclaim writes it back unchanged. */
  nonce: string;
  /** The key's mod revision: its grant's, or its latest Proclaim's. */
  revision: bigint;
  /** A semaphore permit's most holders (semaphore.ts); 0 for any other holding. */
  maxHolders: number;
}

export function decodeOwner(kv: IKeyValue): Owner {
  const { head, value } = splitOwner(kv.value);
  let v: { holder?: unknown; principal?: unknown; nonce?: unknown; maxHolders?: unknown } = {};
  try {
    v = JSON.parse(head.toString());
  } catch {
    // A key written by something else than fencekeeper: no holder label or principal to show.
  }
  return {
    holder: String(v.holder ?? ""),
    principal: String(v.principal ?? ""),
    generation: BigInt(kv.create_revision),
    leaseId: BigInt(kv.lease),
    value,
    nonce: String(v.nonce ?? ""),
    revision: BigInt(kv.mod_revision),
    maxHolders: holderCapOf(v.maxHolders),
  };
}

function splitOwner(raw: Buffer): { head: Buffer; value: Uint8Array } {
  const at = raw.indexOf(NEWLINE);
  return at < 0 ? { head: raw, value: new Uint8Array(0) } : { head: raw.subarray(0, at), value: raw.subarray(at + 1) };
}

/** The most holders a holder's or waiter's value names: 0 when it names none (a shared holding without a cap). */
export function decodeMaxHolders(value: Buffer): number {
  try {
    return holderCapOf(JSON.parse(splitOwner(value).head.toString()).maxHolders);
  } catch {
    return 0;
  }
}

/** A stored max_holders: a positive integer, or 0 (no cap) for anything else. */
const holderCapOf = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v > 0 ? v : 0);

/** The greatest generation issued, from the issued key as read (0: none yet). */
export function lastIssuedOf(kv: IKeyValue | undefined): bigint {
  return kv ? BigInt(kv.mod_revision) : 0n;
}

/**
 * The comparisons that say a token is judged as it must be, for one resource. ORDER: the generation
 * was issued (issued's mod revision reaches it) and no newer generation has written (fence <= it).
 * LIVE adds: it still holds the resource.
 */
export function fenceCompares(keys: KeyLayout, token: { resource: string; generation: bigint; leaseId: bigint }, live: boolean): ICompare[] {
  const compares = [
    cmp.modAbove(keys.issuedKey(token.resource), token.generation - 1n),
    cmp.valueLess(keys.fenceKey(token.resource), encodeGeneration(token.generation + 1n)),
  ];
  if (live) compares.push(...holds(keys, token));
  return compares;
}

/** The key a token's grant created: the owner key, or a shared token's holder key. */
export function holderKeyOf(keys: KeyLayout, token: { resource: string; leaseId: bigint; mode?: "exclusive" | "shared" }): Buffer {
  return token.mode === "shared" ? keys.sharedKey(token.resource, token.leaseId) : keys.ownerKey(token.resource);
}

/** The token's generation holds its resource: the key its grant created is still there, on its lease. */
export function holds(keys: KeyLayout, token: { resource: string; generation: bigint; leaseId: bigint; mode?: "exclusive" | "shared" }): ICompare[] {
  const holderKey = holderKeyOf(keys, token);
  return [cmp.createdAt(holderKey, token.generation), cmp.leaseIs(holderKey, token.leaseId)];
}

/** Whether an owner key as read is the token's: the same test as holds(), on what was read. */
export function isHeldBy(owner: IKeyValue | undefined, token: { generation: bigint; leaseId: bigint }): boolean {
  return owner !== undefined && BigInt(owner.create_revision) === token.generation && BigInt(owner.lease) === token.leaseId;
}

/** What a preempted lease's key says (lease/preemption.ts). byGeneration is 0 until the preemptor is granted. */
export interface PreemptedEntry {
  resource: string;
  generation: bigint;
  byGeneration: bigint;
  byPrincipal: string;
}

export function encodePreempted(e: PreemptedEntry): Buffer {
  return Buffer.from(JSON.stringify({ resource: e.resource, generation: String(e.generation), byGeneration: String(e.byGeneration), byPrincipal: e.byPrincipal }));
}

export function decodePreempted(value: Buffer): PreemptedEntry | undefined {
  try {
    const v = JSON.parse(value.toString()) as Record<string, unknown>;
    return { resource: String(v.resource ?? ""), generation: BigInt(String(v.generation ?? "0")), byGeneration: BigInt(String(v.byGeneration ?? "0")), byPrincipal: String(v.byPrincipal ?? "") };
  } catch {
    return undefined;
  }
}

/** The lock-delay key's value while a preemption hands the resource over (see the layout above). */
export const PREEMPTING = Buffer.from(JSON.stringify({ seconds: 0, preempting: true }));

/** A lock-delay key's value: the delay, in whole seconds. */
export function encodeLockDelay(seconds: number): Buffer {
  return Buffer.from(JSON.stringify({ seconds }));
}

/** A lock-delay key as read: its delay, the generation that put it, and its delay lease. */
export interface LockDelayEntry {
  seconds: number;
  /** The key stands for a preemption handing the resource over, not for a lock-delay. */
  preempting: boolean;
  generation: bigint;
  delayLease: bigint;
}

export function decodeLockDelay(kv: IKeyValue): LockDelayEntry {
  let seconds = 0;
  let preempting = false;
  try {
    const v = JSON.parse(kv.value.toString());
    seconds = Number(v.seconds) || 0;
    preempting = v.preempting === true;
  } catch {
    // A key written by something else than fencekeeper: it still delays, for an unknown time.
  }
  return { seconds, preempting, generation: BigInt(kv.create_revision), delayLease: BigInt(kv.lease) };
}

// The lease ids of an acquisition with a lock-delay. It has two etcd leases, and fencekeeper chooses
// their ids (etcd grants a requested id) so that the first one's id says so and names the second: any
// replica that renews or revokes the acquisition's lease renews or revokes the delay lease with it,
// knowing it from the id alone, without a read; a lease without a lock-delay costs nothing more.
//   bits 62-48  DELAYED_MARK (the acquisition's lease) or DELAY_MARK (its delay lease)
//   bits 47-16  32 random bits, the same in both
//   bits 15-0   a check of the random bits
// etcd's own ids begin with 16 bits of its member id, then a time and a counter: one of them passes
// for a delayed acquisition's only if 31 bits match by chance, and then the only cost is the renewal of
// a delay lease that does not exist.
const DELAYED_MARK = 0x1d1an;
const DELAY_MARK = 0x1d1bn;

const checkBits = (random: number) => BigInt(Math.imul(random ^ 0x5bd1e995, 0x9e3779b1) >>> 16);
const markedId = (mark: bigint, random: number) => (mark << 48n) | (BigInt(random >>> 0) << 16n) | checkBits(random >>> 0);

/** The ids to request for a delayed acquisition's lease and its delay lease, from 32 random bits. */
export function delayedLeaseIds(random: number): { lease: bigint; delayLease: bigint } {
  return { lease: markedId(DELAYED_MARK, random), delayLease: markedId(DELAY_MARK, random) };
}

/** The delay lease that goes with a lease, if it is a delayed acquisition's (see above). */
export function delayLeaseOf(leaseId: bigint): bigint | undefined {
  if (leaseId >> 48n !== DELAYED_MARK) return undefined;
  const random = Number((leaseId >> 16n) & 0xffffffffn);
  return (leaseId & 0xffffn) === checkBits(random) ? markedId(DELAY_MARK, random) : undefined;
}

/** The signing key's value: its id and its PKCS #8 private key. */
export interface SigningKeyRecord {
  keyId: string;
  pkcs8: Buffer;
}

export function encodeSigningKey(r: SigningKeyRecord): Buffer {
  return Buffer.from(JSON.stringify({ keyId: r.keyId, pkcs8: r.pkcs8.toString("base64") }));
}

export function decodeSigningKey(kv: IKeyValue): SigningKeyRecord {
  const v = JSON.parse(kv.value.toString()) as { keyId: string; pkcs8: string };
  return { keyId: v.keyId, pkcs8: Buffer.from(v.pkcs8, "base64") };
}

/** A binding's value: the principal's name, exactly, so that a transaction can compare it. */
export function encodeBinding(principal: string): Buffer {
  return Buffer.from(principal, "utf8");
}

export function decodeBinding(kv: IKeyValue | undefined): string | undefined {
  return kv?.value.toString("utf8");
}

/** An idempotency record: what a mutation with an idempotency key did. */
export interface IdempotencyRecord {
  /** Hash of the request the key was first used with. */
  fingerprint: string;
  /** The fence the mutation set. */
  fence: bigint;
}

export function encodeRecord(r: IdempotencyRecord): Buffer {
  return Buffer.from(JSON.stringify({ fingerprint: r.fingerprint, fence: r.fence.toString() }));
}

export function decodeRecord(kv: IKeyValue): IdempotencyRecord & { revision: bigint } {
  const parsed = JSON.parse(kv.value.toString()) as { fingerprint: string; fence: string };
  // The record commits with its mutation, so its last write is the mutation's revision.
  return { fingerprint: parsed.fingerprint, fence: BigInt(parsed.fence), revision: BigInt(kv.mod_revision) };
}
