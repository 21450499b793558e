// Input checks shared by the lease coordinator and the fenced store. Each failure says what was wrong
// and what is allowed, so that a person can fix the request.
import { invalid } from "../errors/errors.js";
import {
  MAX_HOLDER_BYTES,
  MAX_IDEMPOTENCY_KEY_BYTES,
  MAX_KEY_BYTES,
  MAX_RESOURCE_BYTES,
  MAX_VALUE_BYTES,
  type Limits,
} from "./limits.js";
import type { Token } from "../tokens/token.js";

// C0 and C1 control characters, including NUL and DEL. Shared with the policy file's check of resource
// patterns (auth/policy-schema.ts), which must refuse what no resource name can hold.
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;
// A lone surrogate means the bytes on the wire were not valid UTF-8.
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function checkName(what: string, value: string, maxBytes: number, required: boolean): void {
  if (value.length === 0) {
    if (required) throw invalid(`${what} is empty; give 1 to ${maxBytes} bytes of UTF-8`);
    return;
  }
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > maxBytes) throw invalid(`${what} is ${bytes} bytes; at most ${maxBytes} bytes are allowed`);
  if (LONE_SURROGATE.test(value)) throw invalid(`${what} is not valid UTF-8`);
  const m = CONTROL_CHARACTER.exec(value);
  if (m) {
    const code = m[0].charCodeAt(0).toString(16).padStart(4, "0");
    throw invalid(`${what} contains the control character U+${code} at position ${m.index}; control characters are not allowed`);
  }
}

export function checkResource(resource: string, what = "resource"): void {
  checkName(what, resource, MAX_RESOURCE_BYTES, true);
}

export function checkKey(key: string, what = "key"): void {
  checkName(what, key, MAX_KEY_BYTES, true);
}

/** A Range prefix may be empty (all keys). */
export function checkPrefix(prefix: string): void {
  checkName("prefix", prefix, MAX_KEY_BYTES, false);
}

export function checkValue(value: Uint8Array, what = "value"): void {
  if (value.byteLength > MAX_VALUE_BYTES) {
    throw invalid(`${what} is ${value.byteLength} bytes; at most ${MAX_VALUE_BYTES} bytes (1 MiB) are allowed`);
  }
}

export function checkHolder(holder: string): void {
  checkName("holder", holder, MAX_HOLDER_BYTES, false);
}

export function checkIdempotencyKey(key: string): void {
  checkName("idempotency_key", key, MAX_IDEMPOTENCY_KEY_BYTES, false);
}

/** Turns a requested TTL into whole seconds, refusing what etcd cannot grant or the limits forbid. */
export function ttlSeconds(requestedMs: number | undefined, limits: Limits): number {
  const range = `allowed: ${limits.minTtlSeconds}s to ${limits.maxTtlSeconds}s`;
  if (requestedMs === undefined) throw invalid(`ttl is missing; ${range}`);
  if (!Number.isFinite(requestedMs) || requestedMs < limits.minTtlSeconds * 1000) {
    throw invalid(`ttl ${requestedMs / 1000}s is below the minimum; ${range}`);
  }
  if (requestedMs > limits.maxTtlSeconds * 1000) throw invalid(`ttl ${requestedMs / 1000}s is above the maximum; ${range}`);
  return Math.ceil(requestedMs / 1000);
}

/** A mutation's token: present, well formed, and for the resource it writes. */
export function checkToken(token: Token | undefined, what = "mutation.token"): Token {
  if (!token) throw invalid(`${what} is missing; every mutation carries the token returned by LeaseService.Acquire`);
  checkResource(token.resource, `${what}.resource`);
  if (token.generation <= 0n) throw invalid(`${what}.generation must be a positive generation from Acquire, got ${token.generation}`);
  if (token.leaseId <= 0n) throw invalid(`${what}.lease_id must be a positive lease id from Acquire, got ${token.leaseId}`);
  // Signed over as UTF-8: bytes that are not UTF-8 could not be what the server signed.
  if (token.principal && LONE_SURROGATE.test(token.principal)) throw invalid(`${what}.principal is not valid UTF-8`);
  if (token.keyId && LONE_SURROGATE.test(token.keyId)) throw invalid(`${what}.key_id is not valid UTF-8`);
  return token;
}

export function checkLeaseId(leaseId: bigint, what = "lease_id"): void {
  if (leaseId <= 0n) {
    const from = what === "session_id" ? "OpenSession" : "Acquire";
    throw invalid(`${what} must be a positive ${what === "session_id" ? "session" : "lease"} id from ${from}, got ${leaseId}`);
  }
}
