// The fencing token in the domain's terms: which resource, which generation, which etcd lease; and, once
// issued, to whom and under which signature.

export interface Token {
  readonly resource: string;
  /** The create revision of the owner key: strictly increasing across acquisitions of one resource. */
  readonly generation: bigint;
  readonly leaseId: bigint;
  /** The principal that acquired it; "" without authentication. */
  readonly principal?: string;
  /** The key that signed it, and the Ed25519 signature over canonicalToken(); empty when unsigned. */
  readonly keyId?: string;
  readonly signature?: Uint8Array;
  /** Absent or "exclusive": the only holder, which may write; "shared": one of many, which may not. */
  readonly mode?: AcquireMode;
}

/** How an acquisition holds its resource (AcquireMode in token.proto). */
export type AcquireMode = "exclusive" | "shared";

/** AcquireMode's number in token.proto, which a shared token's signature covers. */
const SHARED_MODE_NUMBER = "2";

/** How the fenced store judges a token (see FenceMode in token.proto). */
export type FenceMode = "order" | "live";

const CONTEXT = "fencekeeper-token-v1";

/**
 * The bytes a token's signature covers (token.proto, FencingToken.signature): for each field, its length
 * as 4 bytes big-endian and its UTF-8 bytes. Lengths keep fields apart whatever they contain. A shared
 * token has one field more, its mode: an exclusive token's bytes are those of tokens issued before
 * shared ones existed, and a shared token never verifies as an exclusive one.
 */
export function canonicalToken(t: Token, keyId: string): Buffer {
  const mode = t.mode === "shared" ? [SHARED_MODE_NUMBER] : [];
  const fields = [CONTEXT, t.resource, t.generation.toString(), t.leaseId.toString(), t.principal ?? "", keyId, ...mode].map((f) => Buffer.from(f, "utf8"));
  const out = Buffer.allocUnsafe(fields.reduce((n, f) => n + 4 + f.length, 0));
  let at = 0;
  for (const f of fields) {
    at = out.writeUInt32BE(f.length, at);
    at += f.copy(out, at);
  }
  return out;
}
