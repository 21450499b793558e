// What every fenced-write recipe (client/postgres.ts, client/mariadb.ts, client/redis.ts) asks of the
// token it is given, and how it answers: the same words in each store.
import type { Token } from "./token.js";
import { verifyToken, type TokenKey } from "./verify-token.js";

/**
 * Whether the token is genuine, one or the other, required: a token that is not checked may carry any
 * generation, and one made up as 2^63-1 raises the fence past every generation etcd will ever issue,
 * locking every real holder out for good.
 */
export type TokenCheck =
  | {
      /**
       * The server's token keys (FencekeeperClient.tokenKeys()): the token's signature is checked before
       * any command reaches the store, and a token that does not verify writes nothing (outcome "unverified").
       */
      keys: readonly TokenKey[];
      unverified?: false;
    }
  | {
      keys?: undefined;
      /**
       * The caller vouches for the token without a signature check: it acquired the token itself, or the
       * server signs none. Never for a token handed over by someone else (a queue, another service).
       */
      unverified: true;
    };

/**
 * The outcome of a fenced write. Only "applied" wrote anything.
 * - applied: the data now carries this generation as its fence.
 * - stale: a newer generation of the resource has written (fence > the token's generation); this holder
 *   has lost its lease and must stop.
 * - notFound: no such row or key (or only its tombstone, for an update or a delete).
 * - exists: an insert found the row or key already there, written by this or an older generation.
 * - otherResource: the data is guarded by another resource, whose generations are not comparable.
 * - unverified: the token's signature does not verify with the keys given.
 */
export type FencedOutcome =
  | { status: "applied"; fence: bigint }
  | { status: "stale"; fence: bigint }
  | { status: "notFound" }
  | { status: "exists"; fence: bigint | null }
  | { status: "otherResource"; resource: string }
  | { status: "unverified"; reason: string };

/**
 * Checks the token before any command: a shared token cannot write (as in the fenced store: a shared
 * holder shares the resource, so its generation must not move a fence), a token must be verified or
 * vouched for, and one that does not verify is the outcome "unverified". fenced: what the fence guards
 * ("row", "resource"), for the message.
 */
export function checkWriterToken(w: { token: Token } & TokenCheck, fenced: string): Extract<FencedOutcome, { status: "unverified" }> | undefined {
  if (w.token.shared) {
    throw new RangeError(`a shared token (generation ${w.token.generation} of "${w.token.resource}") cannot write: fenced writes need an exclusive acquisition's token`);
  }
  if (!w.keys) {
    if (w.unverified === true) return undefined;
    throw new TypeError(
      "give keys (await client.tokenKeys()) so that the token's signature is checked, or unverified: true for a token this " +
        `program acquired itself: an unchecked token may carry any generation, and a made-up one poisons the ${fenced}'s fence for good`,
    );
  }
  const v = verifyToken(w.token, w.keys);
  return v.ok ? undefined : { status: "unverified", reason: v.reason };
}
