// Offline verification of a fencing token's signature (docs/verifying-tokens.md): whoever holds the
// server's public keys (LeaseService.ListTokenKeys) can check, without asking the server, that fencekeeper
// issued exactly this generation of this resource to this principal. verifyToken and canonicalToken need
// only node:crypto and the generated FencingToken: copy them as they are.
import { createPublicKey, verify } from "node:crypto";
import type { FencingToken } from "../../../gen/ts/fencekeeper/v1/token_pb.js";

export type Verification =
  | { ok: true }
  // "not signed": no signature (the server runs without keys, or it was stripped); "unknown key id": fetch the
  // keys again (ListTokenKeys), still unknown: not ours; "bad signature": altered, or signed by someone else.
  | { ok: false; reason: "not signed" | "unknown key id" | "bad signature" };

type SignedFields = Pick<FencingToken, "resource" | "generation" | "leaseId" | "principal" | "keyId" | "signature" | "mode">;

/** The X.509 SubjectPublicKeyInfo header of an Ed25519 key (RFC 8410); the raw 32 bytes follow it. */
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/**
 * Checks token's Ed25519 signature with the key its keyId names among keys (key id → raw 32-byte public
 * key). ok means fencekeeper issued this token, exactly as it is. It says nothing about whether the token is
 * still the newest: compare its generation with your own fence for that.
 */
export function verifyToken(token: SignedFields, keys: ReadonlyMap<string, Uint8Array>): Verification {
  if (token.signature.length === 0) return { ok: false, reason: "not signed" };
  const raw = keys.get(token.keyId);
  if (!raw || raw.length !== 32) return { ok: false, reason: "unknown key id" };
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: "der", type: "spki" });
  return verify(null, canonicalToken(token), key, token.signature) ? { ok: true } : { ok: false, reason: "bad signature" };
}

/**
 * What the signature covers: for each field, its length in bytes (4 bytes, big endian) and its UTF-8
 * bytes, so that no field can run into the next; then, for a mode other than unset (0) and exclusive
 * (1), the mode's number ("2": shared).
 */
export function canonicalToken(t: SignedFields): Buffer {
  const fields = ["fencekeeper-token-v1", t.resource, t.generation.toString(), t.leaseId.toString(), t.principal, t.keyId];
  if (t.mode !== 0 && t.mode !== 1) fields.push(String(t.mode));
  return Buffer.concat(
    fields.flatMap((f) => {
      const bytes = Buffer.from(f, "utf8");
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.length);
      return [length, bytes];
    }),
  );
}
