// Translation between protobuf messages and domain values.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate, type Duration } from "@bufbuild/protobuf/wkt";
import { invalid } from "../domain/errors.js";
import type { FenceMode, Token } from "../domain/token.js";
import { FenceMode as ProtoFenceMode, type FencingToken, type FencingTokenSchema } from "../../gen/ts/fencekeeper/v1/token_pb.js";

export function tokenFromProto(t: FencingToken | undefined): Token | undefined {
  return t ? { resource: t.resource, generation: t.generation, leaseId: t.leaseId, principal: t.principal, keyId: t.keyId, signature: t.signature } : undefined;
}

export function tokenToProto(t: Token): MessageInitShape<typeof FencingTokenSchema> {
  return {
    resource: t.resource,
    generation: t.generation,
    leaseId: t.leaseId,
    principal: t.principal ?? "",
    keyId: t.keyId ?? "",
    signature: t.signature ?? new Uint8Array(),
  };
}

/** A Duration in milliseconds; undefined when unset. */
export function durationMs(d: Duration | undefined, field: string): number | undefined {
  if (!d) return undefined;
  if (d.nanos < -999_999_999 || d.nanos > 999_999_999 || (d.seconds > 0n && d.nanos < 0) || (d.seconds < 0n && d.nanos > 0)) {
    throw invalid(`${field} is not a valid duration (seconds ${d.seconds}, nanos ${d.nanos})`);
  }
  return Number(d.seconds) * 1000 + d.nanos / 1e6;
}

export function seconds(s: number): { seconds: bigint; nanos: number } {
  return { seconds: BigInt(Math.max(0, Math.floor(s))), nanos: 0 };
}

/** DescribeResponse's and ObserveResponse's lock_delay and lock_delay_until, set only when there is one. */
export function lockDelayToProto(s: { lockDelaySeconds?: number; lockDelayUntil?: Date }) {
  return {
    lockDelay: s.lockDelaySeconds !== undefined ? seconds(s.lockDelaySeconds) : undefined,
    lockDelayUntil: s.lockDelayUntil ? timestampFromDate(s.lockDelayUntil) : undefined,
  };
}

export function fenceModeFromProto(mode: ProtoFenceMode): FenceMode {
  switch (mode) {
    case ProtoFenceMode.UNSPECIFIED:
    case ProtoFenceMode.ORDER:
      return "order";
    case ProtoFenceMode.LIVE:
      return "live";
    default:
      throw invalid(`mutation.mode ${mode} is not a FenceMode; use FENCE_MODE_ORDER (1) or FENCE_MODE_LIVE (2)`);
  }
}
