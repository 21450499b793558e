package io.fencekeeper.client;

import io.fencekeeper.v1.FenceMode;

/**
 * How one write is made: the fence mode it is judged by (null: through a lease, the client's fence mode,
 * FENCE_MODE_LIVE unless the builder said otherwise; with an explicit token, the server's default,
 * FENCE_MODE_ORDER), and an idempotency key (null: none): a retry with the same key and request
 * returns the first result and applies nothing.
 */
public record WriteOptions(FenceMode mode, String idempotencyKey) {
  public static final WriteOptions DEFAULT = new WriteOptions(null, null);

  public static WriteOptions mode(FenceMode mode) {
    return new WriteOptions(mode, null);
  }

  public WriteOptions withMode(FenceMode mode) {
    return new WriteOptions(mode, idempotencyKey);
  }

  public WriteOptions withIdempotencyKey(String key) {
    return new WriteOptions(mode, key);
  }
}
