// Who holds a resource, as protobuf: DescribeResponse and ObserveResponse say it alike (the holder, its
// token, the holders, the lock-delay), each with a few fields of its own. One mapping, so that a field
// added to the holding shows in both answers.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { DescribeResponseSchema, ObserveResponseSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { Description } from "../lease/coordinator.js";
import type { HolderState, Ownership } from "../lease/observe.js";
import { seconds, tokenToProto } from "./convert.js";

export function describeToProto(d: Description): MessageInitShape<typeof DescribeResponseSchema> {
  return {
    ...holdingToProto(d),
    ttl: d.ttlSeconds !== undefined ? seconds(d.ttlSeconds) : undefined,
    holdersWithoutTtl: d.holdersWithoutTtl,
    maxHolders: d.maxHolders,
    waiters: d.waiters,
    fence: d.fence,
    lastIssued: d.lastIssued,
  };
}

export function ownershipToProto(o: Ownership): MessageInitShape<typeof ObserveResponseSchema> {
  return {
    ...holdingToProto(o),
    revision: o.revision,
    joined: o.joined.map(holderToProto),
    maxHolders: o.maxHolders,
    left: o.left.map(holderToProto),
  };
}

/** The fields both answers share. */
function holdingToProto(s: Description | Ownership) {
  return {
    held: s.held,
    holder: s.holder ?? "",
    holderPrincipal: s.holderPrincipal ?? "",
    token: s.token ? tokenToProto(s.token) : undefined,
    holders: s.holders.map(holderToProto),
    value: s.value,
    ...lockDelayToProto(s),
  };
}

function holderToProto(h: HolderState) {
  return {
    holder: h.holder,
    holderPrincipal: h.holderPrincipal ?? "",
    token: tokenToProto(h.token),
    ttl: h.ttlSeconds !== undefined ? seconds(h.ttlSeconds) : undefined,
    value: h.value,
  };
}

/** lock_delay and lock_delay_until, set only when there is one. */
function lockDelayToProto(s: { lockDelaySeconds?: number; lockDelayUntil?: Date }) {
  return {
    lockDelay: s.lockDelaySeconds !== undefined ? seconds(s.lockDelaySeconds) : undefined,
    lockDelayUntil: s.lockDelayUntil ? timestampFromDate(s.lockDelayUntil) : undefined,
  };
}
