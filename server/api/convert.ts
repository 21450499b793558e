// Translation between protobuf messages and domain values (the token's, which the call's edge needs too, in
// server/wire/token-proto.ts).
import type { Duration } from "@bufbuild/protobuf/wkt";
import { invalid } from "../errors/errors.js";
import type { FenceMode } from "../tokens/token.js";
import { FenceMode as ProtoFenceMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";

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

/** When a wait ends: the call's deadline or wait_timeout, the earlier one; undefined when neither is set. */
export function waitEnd(waitTimeout: Duration | undefined, ctx: { timeoutMs(): number | undefined }): number | undefined {
  const waitTimeoutMs = durationMs(waitTimeout, "wait_timeout");
  if (waitTimeoutMs !== undefined && waitTimeoutMs < 0) throw invalid(`wait_timeout must not be negative, got ${waitTimeoutMs / 1000}s`);
  const limits = [ctx.timeoutMs(), waitTimeoutMs].filter((t): t is number => t !== undefined);
  return limits.length ? Date.now() + Math.min(...limits) : undefined;
}
