// The fenced store: a key-value store that refuses writes from stale generations.
//
// Every mutation is one etcd transaction that compares the token with the resource's state, applies
// the writes, raises the fence and records the idempotency key, all or nothing:
//   ORDER: last issued >= generation  (the generation was issued: no fence poisoning)
//          fence <= generation        (no newer generation has written)
//   LIVE:  ORDER, and the generation's line key still exists (its lease is held at commit time)
// When the compares fail, the same transaction reads back what it compared, to say why.
import { createHash } from "node:crypto";
import type { IKeyValue, IRequestOp } from "etcd3";
import { DomainError, invalid } from "../domain/errors.js";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_TXN_VALUE_BYTES, type Limits } from "../domain/limits.js";
import type { FenceMode, Token } from "../domain/token.js";
import { checkIdempotencyKey, checkKey, checkPrefix, checkResource, checkToken, checkValue } from "../domain/validate.js";
import type { Committer } from "../etcd/committer.js";
import { decodeGeneration, encodeGeneration, prefixEnd, type KeyLayout } from "../etcd/keys.js";
import { cmp, op } from "../etcd/ops.js";
import type { Reader } from "../etcd/reader.js";
import { decodeRecord, encodeRecord, hashKey, type IdempotencyLeases } from "./idempotency.js";

export type StoreOp = { kind: "put"; key: string; value: Uint8Array } | { kind: "delete"; key: string };

export interface Mutation {
  /** The resource the request writes; must be the token's. */
  resource: string;
  token: Token | undefined;
  mode: FenceMode;
  idempotencyKey: string;
  ops: StoreOp[];
}

export interface Commit {
  revision: bigint;
  fence: bigint;
  replayed: boolean;
}

export interface Entry {
  key: string;
  value: Uint8Array;
  modRevision: bigint;
}

export interface Page {
  entries: Entry[];
  nextPageToken: string;
  revision: bigint;
}

export interface StoreDeps {
  keys: KeyLayout;
  committer: Committer;
  reader: Reader;
  idempotency: IdempotencyLeases;
  limits: Limits;
}

export class FencedStore {
  constructor(private readonly d: StoreDeps) {}

  async mutate(m: Mutation, what: "put" | "delete" | "txn"): Promise<Commit> {
    const token = this.check(m, what);
    const { keys, reader } = this.d;
    // Only a mutation with an idempotency key needs its fingerprint: it hashes every value.
    const fingerprint = m.idempotencyKey ? fingerprintOf(m, token) : "";
    const recordKey = m.idempotencyKey ? keys.idempotencyKey(m.resource, hashKey(m.idempotencyKey)) : undefined;

    // The idempotency lookup comes before the fence check: a retry of a write that was applied under
    // valid authority gets its answer even after the fence has moved on.
    if (recordKey) {
      const found = await reader.range(what, { key: recordKey });
      if (found.kvs[0]) return replay(found.kvs[0], fingerprint, m.idempotencyKey);
    }

    for (let attempt = 0; ; attempt++) {
      const recordLease = recordKey ? await this.d.idempotency.leaseForNow() : undefined;
      try {
        return await this.commitMutation(m, token, what, fingerprint, recordKey, recordLease);
      } catch (err) {
        // The shared lease of idempotency records is gone (revoked by hand, or etcd lost it): get a new one.
        if (recordLease !== undefined && attempt === 0 && String((err as Error).message).includes("requested lease not found")) {
          this.d.idempotency.forget(recordLease);
          continue;
        }
        throw err;
      }
    }
  }

  async get(resource: string, key: string): Promise<{ found: boolean; value: Uint8Array; modRevision: bigint; fence: bigint }> {
    checkResource(resource);
    checkKey(key);
    const { keys, reader } = this.d;
    const snap = await reader.snapshot("get", [{ key: keys.dataKey(resource, key) }, { key: keys.fenceKey(resource) }]);
    const kv = snap.ranges[0].kvs[0];
    return {
      found: kv !== undefined,
      value: kv?.value ?? new Uint8Array(),
      modRevision: kv ? BigInt(kv.mod_revision) : 0n,
      fence: decodeGeneration(snap.ranges[1].kvs[0]?.value),
    };
  }

  async range(p: { resource: string; prefix: string; pageSize: number; pageToken: string; keysOnly: boolean }): Promise<Page> {
    checkResource(p.resource);
    checkPrefix(p.prefix);
    if (p.pageSize < 0) throw invalid(`page_size must not be negative, got ${p.pageSize}`);
    const size = p.pageSize === 0 ? DEFAULT_PAGE_SIZE : Math.min(p.pageSize, MAX_PAGE_SIZE);
    const cursor = p.pageToken ? decodePageToken(p.pageToken, p.resource, p.prefix) : undefined;
    const { keys, reader } = this.d;
    const all = keys.dataPrefix(p.resource, p.prefix);
    const res = await reader.range("range", {
      key: cursor ? Buffer.concat([keys.dataKey(p.resource, cursor.after), Buffer.from([0])]) : all,
      range_end: prefixEnd(all),
      limit: size,
      keys_only: p.keysOnly,
      ...(cursor ? { revision: cursor.revision.toString() } : {}),
    });
    const revision = cursor?.revision ?? BigInt(res.header.revision);
    const entries = res.kvs.map((kv) => ({
      key: keys.storeKey(p.resource, kv.key),
      value: p.keysOnly ? new Uint8Array() : kv.value,
      modRevision: BigInt(kv.mod_revision),
    }));
    const last = entries[entries.length - 1];
    return {
      entries,
      revision,
      nextPageToken: res.more && last ? encodePageToken({ resource: p.resource, prefix: p.prefix, revision, after: last.key }) : "",
    };
  }

  async getFence(resource: string): Promise<{ fence: bigint; lastIssued: bigint }> {
    checkResource(resource);
    const { keys, reader } = this.d;
    const snap = await reader.snapshot("get fence", [{ key: keys.fenceKey(resource) }, { key: keys.issuedKey(resource) }]);
    return { fence: decodeGeneration(snap.ranges[0].kvs[0]?.value), lastIssued: decodeGeneration(snap.ranges[1].kvs[0]?.value) };
  }

  private check(m: Mutation, what: string): Token {
    checkResource(m.resource);
    const token = checkToken(m.token);
    if (token.resource !== m.resource) {
      throw invalid(`mutation.token is for resource "${token.resource}" but the request writes "${m.resource}"; use the token of the resource you write`);
    }
    checkIdempotencyKey(m.idempotencyKey);
    if (m.ops.length === 0) throw invalid(`${what} has no operations; give at least one put or delete`);
    if (m.ops.length > this.d.limits.maxTxnOps) {
      throw invalid(`${what} has ${m.ops.length} operations; at most ${this.d.limits.maxTxnOps} are allowed in one transaction`);
    }
    const seen = new Set<string>();
    let valueBytes = 0;
    m.ops.forEach((o, i) => {
      const where = m.ops.length > 1 ? `ops[${i}].` : "";
      checkKey(o.key, `${where}key`);
      if (seen.has(o.key)) throw invalid(`${where}key "${o.key}" appears twice; each key may appear once in a transaction`);
      seen.add(o.key);
      if (o.kind === "put") {
        checkValue(o.value, `${where}value`);
        valueBytes += o.value.byteLength;
      }
    });
    if (valueBytes > MAX_TXN_VALUE_BYTES) {
      throw invalid(`${what} carries ${valueBytes} bytes of values; at most ${MAX_TXN_VALUE_BYTES} bytes (1 MiB) in all are allowed`);
    }
    return token;
  }

  private async commitMutation(
    m: Mutation,
    token: Token,
    what: string,
    fingerprint: string,
    recordKey: Buffer | undefined,
    recordLease: bigint | undefined,
  ): Promise<Commit> {
    const { keys, committer } = this.d;
    const g = token.generation;
    const issuedKey = keys.issuedKey(m.resource);
    const fenceKey = keys.fenceKey(m.resource);
    const lineKey = keys.queueKey(m.resource, token.leaseId);

    const compare = [cmp.valueGreater(issuedKey, encodeGeneration(g - 1n)), cmp.valueLess(fenceKey, encodeGeneration(g + 1n))];
    const writes: IRequestOp[] = m.ops.map((o) =>
      o.kind === "put" ? op.put(keys.dataKey(m.resource, o.key), Buffer.from(o.value)) : op.del(keys.dataKey(m.resource, o.key)),
    );
    writes.push(op.put(fenceKey, encodeGeneration(g)));
    const why: IRequestOp[] = [op.get(issuedKey), op.get(fenceKey)];
    if (m.mode === "live") {
      compare.push(cmp.createdAt(lineKey, g));
      why.push(op.get(lineKey));
    }
    if (recordKey) {
      compare.push(cmp.createdAt(recordKey, 0n));
      writes.push(op.put(recordKey, encodeRecord({ fingerprint, fence: g }), recordLease));
      why.push(op.get(recordKey));
    }

    const res = await committer.commit(what, { compare, success: writes, failure: why });
    if (res.succeeded) return { revision: BigInt(res.header.revision), fence: g, replayed: false };

    const [issued, fence, ...rest] = res.responses.map((r) => r.response_range.kvs[0]);
    const line = m.mode === "live" ? rest.shift() : undefined;
    const record = recordKey ? rest.shift() : undefined;
    // A concurrent request with the same idempotency key committed first.
    if (record) return replay(record, fingerprint, m.idempotencyKey);
    const lastIssued = decodeGeneration(issued?.value);
    const currentFence = decodeGeneration(fence?.value);
    const meta = { resource: m.resource, generation: String(g) };
    if (lastIssued < g) {
      throw new DomainError(
        "failed_precondition",
        `generation ${g} was never issued for "${m.resource}" (the last issued is ${lastIssued}); use a token returned by Acquire`,
        "GENERATION_NOT_ISSUED",
        { ...meta, last_issued: String(lastIssued) },
      );
    }
    if (currentFence > g) {
      throw new DomainError(
        "failed_precondition",
        `stale token: generation ${g} of "${m.resource}" is older than the fence ${currentFence}, so a newer holder has ` +
          "written; this holder has lost its lease and must stop",
        "STALE_TOKEN",
        { ...meta, fence: String(currentFence) },
      );
    }
    if (m.mode === "live" && (!line || BigInt(line.create_revision) !== g)) {
      throw new DomainError(
        "failed_precondition",
        `lease ${token.leaseId} of generation ${g} of "${m.resource}" is no longer held (it expired or was released); ` +
          "acquire again before writing",
        "LEASE_NOT_HELD",
        { ...meta, lease_id: String(token.leaseId) },
      );
    }
    throw new Error(`mutation of "${m.resource}" refused without a cause: fence ${currentFence}, issued ${lastIssued}, generation ${g}`);
  }
}

function replay(kv: IKeyValue, fingerprint: string, idempotencyKey: string): Commit {
  const record = decodeRecord(kv);
  if (record.fingerprint !== fingerprint) {
    throw new DomainError(
      "invalid_argument",
      `idempotency_key "${idempotencyKey}" was already used for a different request; use a new key for a new request`,
      "IDEMPOTENCY_KEY_REUSED",
      { idempotency_key: idempotencyKey },
    );
  }
  return { revision: record.revision, fence: record.fence, replayed: true };
}

/** What makes two requests the same request: everything but the idempotency key itself. */
function fingerprintOf(m: Mutation, token: Token): string {
  const h = createHash("sha256");
  h.update(JSON.stringify([m.resource, token.generation.toString(), token.leaseId.toString(), m.mode]));
  for (const o of m.ops) {
    h.update(JSON.stringify([o.kind, o.key, o.kind === "put" ? o.value.byteLength : -1]));
    if (o.kind === "put") h.update(o.value);
  }
  return h.digest("hex");
}

interface Cursor {
  resource: string;
  prefix: string;
  revision: bigint;
  after: string;
}

function encodePageToken(c: Cursor): string {
  return Buffer.from(JSON.stringify({ r: c.resource, p: c.prefix, v: c.revision.toString(), a: c.after })).toString("base64url");
}

function decodePageToken(token: string, resource: string, prefix: string): Cursor {
  let c: { r?: unknown; p?: unknown; v?: unknown; a?: unknown };
  try {
    c = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw invalid("page_token is malformed; pass the next_page_token of the previous page unchanged");
  }
  if (typeof c.r !== "string" || typeof c.p !== "string" || typeof c.v !== "string" || typeof c.a !== "string" || !/^\d+$/.test(c.v)) {
    throw invalid("page_token is malformed; pass the next_page_token of the previous page unchanged");
  }
  if (c.r !== resource || c.p !== prefix) {
    throw invalid("page_token belongs to another listing; use it with the same resource and prefix");
  }
  return { resource: c.r, prefix: c.p, revision: BigInt(c.v), after: c.a };
}
