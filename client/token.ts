// The fencing token as the SDK hands it out, and its two text forms: "resource:generation:leaseId" for
// people and shells, and JSON (numbers as strings) for scripts. Both parse back to the same token.
import type { FencingToken } from "../gen/ts/fencekeeper/v1/token_pb.js";

export interface Token {
  /** The resource this token is for. */
  readonly resource: string;
  /** The generation: greater than that of every earlier acquisition of the same resource. */
  readonly generation: bigint;
  /** The etcd lease that backs this generation. */
  readonly leaseId: bigint;
}

export function tokenFromProto(t: FencingToken): Token {
  return { resource: t.resource, generation: t.generation, leaseId: t.leaseId };
}

export function tokenToProto(t: Token): { resource: string; generation: bigint; leaseId: bigint } {
  return { resource: t.resource, generation: t.generation, leaseId: t.leaseId };
}

/** "resource:generation:leaseId". The resource may itself contain ":"; the last two fields are numbers. */
export function formatToken(t: Token): string {
  return `${t.resource}:${t.generation}:${t.leaseId}`;
}

/** The token as a JSON-ready object, numbers as decimal strings. */
export function tokenToJson(t: Token): { resource: string; generation: string; leaseId: string } {
  return { resource: t.resource, generation: String(t.generation), leaseId: String(t.leaseId) };
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
    return { resource: o.resource, generation: BigInt(generation as string), leaseId: BigInt(leaseId as string) };
  }
  const m = /^(.+):(\d+):(\d+)$/s.exec(s);
  if (!m) throw new RangeError(`a token is "resource:generation:leaseId" or the JSON that acquire --json prints, got "${s}"`);
  return { resource: m[1], generation: BigInt(m[2]), leaseId: BigInt(m[3]) };
}

function isInteger(v: unknown): boolean {
  return (typeof v === "string" && /^\d+$/.test(v)) || (typeof v === "number" && Number.isSafeInteger(v) && v >= 0);
}
