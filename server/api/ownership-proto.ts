// Who holds a resource, as protobuf: DescribeResponse and ObserveResponse say it alike (the holder, its
// token, the holders, the lock-delay), each with a few fields of its own. One mapping, so that a field
// added to the holding shows in both answers.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { DescribeResponseSchema, ObserveResponseSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { Description } from "../lease/coordinator.js";
import type { HolderState, Ownership } from "../lease/observe.js";
import { seconds } from "./convert.js";
import { tokenToProto } from "../wire/token-proto.js";

export function describeToProto(d: Description): MessageInitShape<typeof DescribeResponseSchema> {
  return {
    ...holdingToProto(d),
    ttl: d.ttlSeconds !== undefined ? seconds(d.ttlSeconds) : undefined,
    holdersWithoutTtl: d.holdersWithoutTtl,
    nextHoldersPageToken: d.nextHoldersPageToken ?? "",
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
    // A value is sent once per message: a holder that joined is in holders with its value, and one that
    // left holds nothing now.
    joined: o.joined.map((h) => holderToProto(h, false)),
    maxHolders: o.maxHolders,
    left: o.left.map((h) => holderToProto(h, false)),
    missedChanges: o.missedChanges ?? false,
  };
}

/** The fields both answers share. A value is sent once: the exclusive holder's at the top, not in holders. */
function holdingToProto(s: Description | Ownership) {
  const exclusive = s.token !== undefined;
  return {
    held: s.held,
    holder: s.holder ?? "",
    holderPrincipal: s.holderPrincipal ?? "",
    token: s.token ? tokenToProto(s.token) : undefined,
    holders: s.holders.map((h) => holderToProto(h, !exclusive)),
    value: s.value,
    ...lockDelayToProto(s),
  };
}

function holderToProto(h: HolderState, withValue: boolean) {
  return {
    holder: h.holder,
    holderPrincipal: h.holderPrincipal ?? "",
    token: tokenToProto(h.token),
    ttl: h.ttlSeconds !== undefined ? seconds(h.ttlSeconds) : undefined,
    value: withValue ? h.value : undefined,
    valueLeftOut: h.valueLeftOut ?? false,
  };
}

/** lock_delay and lock_delay_until, set only when there is one. */
function lockDelayToProto(s: { lockDelaySeconds?: number; lockDelayUntil?: Date }) {
  return {
    lockDelay: s.lockDelaySeconds !== undefined ? seconds(s.lockDelaySeconds) : undefined,
    lockDelayUntil: s.lockDelayUntil ? timestampFromDate(s.lockDelayUntil) : undefined,
  };
}
