package io.fencekeeper.client;

/** How the store judges a write's token (docs/client-semantics.md, "The store's writes"). */
public enum FenceMode {
  /** The order of generations alone: the token's generation is not older than the resource's fence. */
  ORDER,
  /** ORDER, and the token's lease is still held in etcd (LEASE_NOT_HELD otherwise). */
  LIVE
}
