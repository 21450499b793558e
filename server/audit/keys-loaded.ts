// "keys loaded" lines: which keys this replica verifies callers' JWTs with, and which keys sign and verify
// fencing tokens, at startup and on each SIGHUP. Ids and counts only, never a key.
import type { Logger } from "pino";
import type { Authenticator } from "../auth/authenticator.js";
import type { PublicKey } from "../tokens/signer.js";
import type { AuditTrail } from "./trail.js";

export async function auditKeys(
  audit: AuditTrail,
  authenticator: Authenticator,
  /** The token keys, the signing one first: read from etcd (the server's own, or --token-signing-key's). */
  tokenKeys: () => Promise<PublicKey[]>,
  trigger: "startup" | "SIGHUP",
  log: Logger,
): Promise<void> {
  const jwt = authenticator.verificationKeys();
  if (jwt) audit.keysLoaded("jwt verification", jwt.kids, jwt.count, trigger);
  try {
    const keys = await tokenKeys();
    audit.keysLoaded("token signing", keys.map((k) => k.keyId), keys.length, trigger);
  } catch (err) {
    log.warn({ err: (err as Error).message }, "the token signing keys could not be read for the audit trail");
  }
}
