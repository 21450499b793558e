package io.fencekeeper.client;

import java.util.Objects;

/** One operation of a transaction (Store.txn, Lease.txn): a put of value, or, with value null, a delete. Make it with Store.putOp or Store.deleteOp. */
public record TxnOp(String key, byte[] value) {
  public TxnOp {
    Objects.requireNonNull(key, "key");
  }

  public boolean isDelete() {
    return value == null;
  }
}
