// From a case's template to the message to send: references to tokens, leases, resources and values are
// filled in from the model of the moment (test/fuzz/model.ts), and tokens are tampered with as the
// reference asks. The choices depend only on the reference's numbers and the model's lists, so a case
// lands on the same kind of token every time it is run.
import { create } from "@bufbuild/protobuf";
import { FencingTokenSchema, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { BAD_UTF8, MODEL_RESOURCES, resourceName, type LeaseRef, type Principal, type TokenRef } from "./generators.js";
import type { ServerModel } from "./model.js";

const other = (p: Principal): Principal => (p === "alice" ? "bob" : "alice");

/** The tag in front of every value written: the case's serial, so a value found in etcd names its writer. */
export const valueTag = (serial: number, n: number) => Buffer.from(`fz${serial}.${n}:`);

/** A token that exists for nobody: what forged variants start from when the principal holds nothing yet. */
function nothing(): FencingToken {
  return create(FencingTokenSchema, { resource: resourceName(0), generation: 1n, leaseId: 1n });
}

function choose<T>(list: T[], pick: number): T | undefined {
  return list.length === 0 ? undefined : list[pick % list.length];
}

export function tokenFor(ref: TokenRef["$token"], model: ServerModel): FencingToken {
  const current = model.currentOf(ref.owner).map((r) => r.token);
  const old = model.old.get(ref.owner)!.map((r) => r.token);
  const base = (ref.variant === "old" ? (choose(old, ref.pick) ?? choose(current, ref.pick)) : (choose(current, ref.pick) ?? choose(old, ref.pick))) ?? nothing();
  const t = create(FencingTokenSchema, { ...base, signature: new Uint8Array(base.signature) });
  switch (ref.variant) {
    case "current":
    case "old":
      return t;
    case "generation+1":
      t.generation += 1n;
      return t;
    case "generation-1":
      t.generation -= 1n;
      return t;
    case "lease-id":
      t.leaseId += 1n;
      return t;
    case "principal":
      t.principal = other(ref.owner);
      return t;
    case "resource":
      t.resource = resourceName((ref.pick + 1) % MODEL_RESOURCES);
      return t;
    case "signature":
      if (t.signature.length === 0) t.signature = new Uint8Array(64);
      t.signature[ref.pick % t.signature.length] ^= 1 << ref.pick % 8;
      return t;
    case "unsigned":
      t.signature = new Uint8Array();
      t.keyId = "";
      return t;
    case "key-id-ff":
      t.keyId = `${t.keyId.slice(0, 4)}${BAD_UTF8}`;
      return t;
    case "forged-zero":
    case "forged-negative":
    case "forged-huge":
      t.generation = ref.variant === "forged-zero" ? 0n : ref.variant === "forged-negative" ? -1n : 1n << 62n;
      t.signature = new Uint8Array();
      t.keyId = "";
      return t;
  }
}

export function leaseFor(ref: LeaseRef["$lease"], model: ServerModel): bigint {
  switch (ref.variant) {
    case "current":
      return choose(model.currentOf(ref.owner), ref.pick)?.token.leaseId ?? choose(model.sessions.get(ref.owner)!, ref.pick) ?? 1n;
    case "old":
      return choose(model.old.get(ref.owner)!, ref.pick)?.token.leaseId ?? 2n;
    case "session":
      return choose(model.sessions.get(ref.owner)!, ref.pick) ?? 3n;
    case "zero":
      return 0n;
    case "negative":
      return -1n - BigInt(ref.pick);
    case "random":
      // etcd's lease ids are large; these small odd ones are never handed out.
      return BigInt(ref.pick) * 2n + 1001n;
    case "max":
      return (1n << 63n) - 1n;
  }
}

/** The message to send: the template with every reference filled in. */
export function materialize(template: unknown, model: ServerModel, serial: number): unknown {
  let values = 0;
  const fill = (v: unknown): unknown => {
    if (v === null || typeof v !== "object" || v instanceof Uint8Array) return v;
    if (Array.isArray(v)) return v.map(fill);
    const o = v as Record<string, unknown>;
    if ("$token" in o) return tokenFor((o as unknown as TokenRef).$token, model);
    if ("$lease" in o) return leaseFor((o as unknown as LeaseRef).$lease, model);
    if ("$resource" in o) return resourceName(o.$resource as number);
    if ("$value" in o) return Buffer.concat([valueTag(serial, values++), o.$value as Uint8Array]);
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o)) out[k] = fill(x);
    // A mutation's resource that is "its token's own" is known only once the token is (a Batch's writes too).
    if ((out.resource as { $sameAsToken?: boolean } | undefined)?.$sameAsToken) {
      out.resource = (out.mutation as { token?: FencingToken } | undefined)?.token?.resource ?? resourceName(0);
    }
    return out;
  };
  return fill(template) as Record<string, unknown>;
}
