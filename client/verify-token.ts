// Offline verification of a token's signature (docs/verifying-tokens.md): whether fencekeeper issued
// exactly this generation of this resource to this principal, checked with the server's public keys
// (FencekeeperClient.tokenKeys(), fetched once and again on an unknown key id) and no call. It proves
// issuance, not freshness: a resource still compares generations with its own fence.
import { createPublicKey, verify } from "node:crypto";
import type { Token } from "./token.js";

export interface TokenKey {
  keyId: string;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Uint8Array;
}

export type Verification = { ok: true } | { ok: false; reason: "not signed" | "unknown key id" | "bad signature" };

/**
 * The bytes a token's signature covers: each field's length (4 bytes, big-endian), then its UTF-8 bytes;
 * a shared token has one field more, its mode's number ("2"), so that it never verifies as an exclusive one.
 */
export function canonicalToken(t: Token): Buffer {
  const fields = ["fencekeeper-token-v1", t.resource, t.generation.toString(), t.leaseId.toString(), t.principal ?? "", t.keyId ?? "", ...(t.shared ? ["2"] : [])];
  return Buffer.concat(
    fields.flatMap((f) => {
      const bytes = Buffer.from(f, "utf8");
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      return [length, bytes];
    }),
  );
}

export function verifyToken(t: Token, keys: readonly TokenKey[]): Verification {
  if (!t.signature?.length) return { ok: false, reason: "not signed" };
  const key = keys.find((k) => k.keyId === t.keyId);
  if (!key) return { ok: false, reason: "unknown key id" };
  const publicKey = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(key.publicKey).toString("base64url") }, format: "jwk" });
  return verify(null, canonicalToken(t), publicKey, t.signature) ? { ok: true } : { ok: false, reason: "bad signature" };
}
