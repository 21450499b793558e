package io.fencekeeper.client;

/**
 * How one write is made: the fence mode it is judged by (null: through a lease, the client's fence mode,
 * LIVE unless the builder said otherwise; with an explicit token, the server's default,
 * ORDER), and an idempotency key (null: none): a retry with the same key and request
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

  /** @deprecated the generated type: use mode(FenceMode). */
  @Deprecated
  public static WriteOptions mode(io.fencekeeper.v1.FenceMode mode) {
    return new WriteOptions(Protos.mode(mode), null);
  }

  /** @deprecated the generated type: use withMode(FenceMode). */
  @Deprecated
  public WriteOptions withMode(io.fencekeeper.v1.FenceMode mode) {
    return new WriteOptions(Protos.mode(mode), idempotencyKey);
  }

  public WriteOptions withIdempotencyKey(String key) {
    return new WriteOptions(mode, key);
  }
}
