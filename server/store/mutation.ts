// A mutation of the fenced store, as the API hands it to the store: what fenced-store.ts commits and
// idempotency.ts fingerprints. Apart from both, so that each imports it without importing the other.
import type { FenceMode, Token } from "../tokens/token.js";

export type StoreOp = { kind: "put"; key: string; value: Uint8Array } | { kind: "delete"; key: string };

export interface Mutation {
  /** The resource the request writes; must be the token's. */
  resource: string;
  token: Token | undefined;
  mode: FenceMode;
  idempotencyKey: string;
  ops: StoreOp[];
  /**
   * With authentication on, the caller, unless it administers the resource: the token (signed, so its
   * principal is the one that acquired it) must be this principal's.
   */
  principal?: string;
  /** The authenticated caller, admins too, whose idempotency keys this one's is among; undefined without authentication. */
  caller?: string;
}
