package io.fencekeeper.client;

import com.google.protobuf.ByteString;
import io.fencekeeper.v1.DeleteRequest;
import io.fencekeeper.v1.FenceMode;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.GetFenceRequest;
import io.fencekeeper.v1.GetFenceResponse;
import io.fencekeeper.v1.GetRequest;
import io.fencekeeper.v1.GetResponse;
import io.fencekeeper.v1.Mutation;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.TxnDelete;
import io.fencekeeper.v1.TxnOp;
import io.fencekeeper.v1.TxnPut;
import io.fencekeeper.v1.TxnRequest;
import java.util.List;
import java.util.Objects;

/**
 * The fenced store, call by call, with the token given explicitly. Writes through a Lease use these
 * with the lease's token, after a look at the lease; these are also for a program that keeps a token
 * itself. A refused write throws StaleTokenException, LeaseNotHeldException or
 * GenerationNotIssuedException.
 */
public final class Store {
  /** Where a mutation committed: its etcd revision, the resource's fence after it, and whether it was a replay. */
  public record Commit(long revision, long fence, boolean replayed) {
    static Commit of(io.fencekeeper.v1.Commit c) {
      return new Commit(c.getRevision(), c.getFence(), c.getReplayed());
    }
  }

  /** A key as read: found or not, its value, the revision of its last write, and the resource's fence. */
  public record Value(boolean found, ByteString value, long modRevision, long fence) {
    /** The value as UTF-8 text. */
    public String text() {
      return value.toStringUtf8();
    }
  }

  /** A resource's fence (the greatest generation accepted) and the greatest generation issued. */
  public record Fence(long fence, long lastIssued) {}

  private final Calls calls;

  Store(Calls calls) {
    this.calls = calls;
  }

  /** A put inside a txn. */
  public static TxnOp putOp(String key, byte[] value) {
    return TxnOp.newBuilder().setPut(TxnPut.newBuilder().setKey(key).setValue(ByteString.copyFrom(value))).build();
  }

  /** A delete inside a txn. */
  public static TxnOp deleteOp(String key) {
    return TxnOp.newBuilder().setDelete(TxnDelete.newBuilder().setKey(key)).build();
  }

  public Commit put(FencingToken token, String key, byte[] value, WriteOptions o) {
    PutRequest req = PutRequest.newBuilder().setResource(token.getResource()).setKey(key).setValue(ByteString.copyFrom(value))
        .setMutation(mutation(token, o)).build();
    return Commit.of(calls.run(s -> s.store().put(req), false).getCommit());
  }

  public Commit delete(FencingToken token, String key, WriteOptions o) {
    DeleteRequest req = DeleteRequest.newBuilder().setResource(token.getResource()).setKey(key).setMutation(mutation(token, o)).build();
    return Commit.of(calls.run(s -> s.store().delete(req), false).getCommit());
  }

  /** Several puts and deletes under one token, all or nothing (Store.putOp, Store.deleteOp). */
  public Commit txn(FencingToken token, List<TxnOp> ops, WriteOptions o) {
    TxnRequest req = TxnRequest.newBuilder().setResource(token.getResource()).addAllOps(ops).setMutation(mutation(token, o)).build();
    return Commit.of(calls.run(s -> s.store().txn(req), false).getCommit());
  }

  /** Reads a key; needs no token. */
  public Value get(String resource, String key) {
    GetRequest req = GetRequest.newBuilder().setResource(resource).setKey(key).build();
    GetResponse res = calls.run(s -> s.store().get(req), true);
    return new Value(res.getFound(), res.getValue(), res.getModRevision(), res.getFence());
  }

  /** The resource's fence and the greatest generation issued; needs no token. */
  public Fence fence(String resource) {
    GetFenceResponse res = calls.run(s -> s.store().getFence(GetFenceRequest.newBuilder().setResource(resource).build()), true);
    return new Fence(res.getFence(), res.getLastIssued());
  }

  private static Mutation mutation(FencingToken token, WriteOptions o) {
    Objects.requireNonNull(token, "a write needs a token");
    Mutation.Builder m = Mutation.newBuilder().setToken(token).setMode(o.mode() != null ? o.mode() : FenceMode.FENCE_MODE_UNSPECIFIED);
    if (o.idempotencyKey() != null) m.setIdempotencyKey(o.idempotencyKey());
    return m.build();
  }
}
