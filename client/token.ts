// The fencing token as the SDK hands it out, and its two text forms: "resource:generation:leaseId" for
// people and shells, and JSON (numbers as strings, the signature in base64) for scripts. The JSON form
// is the whole token; the short form leaves out who it was issued to and its signature, so a server
// with authentication on, which takes signed tokens only, refuses a token parsed from it.
import { AcquireMode, type FencingToken } from "../gen/ts/fencekeeper/v1/token_pb.js";

export interface Token {
  /** The resource this token is for. */
  readonly resource: string;
  /** The generation: greater than that of every earlier acquisition of the same resource. */
  readonly generation: bigint;
  /** The etcd lease that backs this generation. */
  readonly leaseId: bigint;
  /** The authenticated principal it was issued to; "" or absent without authentication. */
  readonly principal?: string;
  /** The id of the server key that signed it, and the signature (docs/verifying-tokens.md). */
  readonly keyId?: string;
  readonly signature?: Uint8Array;
  /** True on a shared acquisition's token (docs/shared-leases.md): it reads, and the fenced store refuses its writes. */
  readonly shared?: boolean;
}

export function tokenFromProto(t: FencingToken): Token {
  const token = { resource: t.resource, generation: t.generation, leaseId: t.leaseId, principal: t.principal, keyId: t.keyId, signature: t.signature };
  return t.mode === AcquireMode.SHARED ? { ...token, shared: true } : token;
}

export function tokenToProto(t: Token) {
  return {
    resource: t.resource,
    generation: t.generation,
    leaseId: t.leaseId,
    principal: t.principal ?? "",
    keyId: t.keyId ?? "",
    signature: t.signature ?? new Uint8Array(),
    // Signed: a shared token sent without its mode would not verify.
    mode: t.shared ? AcquireMode.SHARED : AcquireMode.UNSPECIFIED,
  };
}

/** "resource:generation:leaseId". The resource may itself contain ":"; the last two fields are numbers. */
export function formatToken(t: Token): string {
  return `${t.resource}:${t.generation}:${t.leaseId}`;
}

export interface TokenJson {
  resource: string;
  generation: string;
  leaseId: string;
  principal?: string;
  keyId?: string;
  /** base64 */
  signature?: string;
  /** Present (true) on a shared token only. */
  shared?: boolean;
}

/** The token as a JSON-ready object, numbers as decimal strings, the signature in base64 (fields it lacks are left out). */
export function tokenToJson(t: Token): TokenJson {
  const json: TokenJson = { resource: t.resource, generation: String(t.generation), leaseId: String(t.leaseId) };
  if (t.principal) json.principal = t.principal;
  if (t.keyId) json.keyId = t.keyId;
  if (t.signature?.length) json.signature = Buffer.from(t.signature).toString("base64");
  if (t.shared) json.shared = true;
  return json;
}

/** Parses either text form; throws a RangeError that says what was expected. */
export function parseToken(text: string): Token {
  const s = text.trim();
  if (s.startsWith("{")) {
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(s);
    } catch {
      throw new RangeError(`token is not valid JSON: ${s}`);
    }
    const generation = o.generation;
    const leaseId = o.leaseId ?? o.lease_id;
    if (typeof o.resource !== "string" || !isInteger(generation) || !isInteger(leaseId)) {
      throw new RangeError(`a JSON token needs "resource" (string), "generation" and "leaseId" (integers), got ${s}`);
    }
    const keyId = o.keyId ?? o.key_id;
    for (const [name, v] of [["principal", o.principal], ["keyId", keyId], ["signature", o.signature]] as const) {
      if (v !== undefined && typeof v !== "string") throw new RangeError(`a JSON token's "${name}" is a string, got ${s}`);
    }
    if (o.shared !== undefined && typeof o.shared !== "boolean") throw new RangeError(`a JSON token's "shared" is true or false, got ${s}`);
    return {
      resource: o.resource,
      generation: BigInt(generation as string),
      leaseId: BigInt(leaseId as string),
      ...(o.principal !== undefined ? { principal: o.principal as string } : {}),
      ...(keyId !== undefined ? { keyId: keyId as string } : {}),
      ...(o.signature !== undefined ? { signature: new Uint8Array(Buffer.from(o.signature as string, "base64")) } : {}),
      ...(o.shared === true ? { shared: true } : {}),
    };
  }
  const m = /^(.+):(\d+):(\d+)$/s.exec(s);
  if (!m) throw new RangeError(`a token is "resource:generation:leaseId" or the JSON that acquire --json prints, got "${s}"`);
  return { resource: m[1], generation: BigInt(m[2]), leaseId: BigInt(m[3]) };
}

function isInteger(v: unknown): boolean {
  return (typeof v === "string" && /^\d+$/.test(v)) || (typeof v === "number" && Number.isSafeInteger(v) && v >= 0);
}
