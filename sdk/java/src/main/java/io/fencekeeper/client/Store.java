package io.fencekeeper.client;

import com.google.protobuf.ByteString;
import io.fencekeeper.v1.BatchRequest;
import io.fencekeeper.v1.BatchResponse;
import io.fencekeeper.v1.DeleteRequest;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.GetFenceRequest;
import io.fencekeeper.v1.GetFenceResponse;
import io.fencekeeper.v1.GetRequest;
import io.fencekeeper.v1.GetResponse;
import io.fencekeeper.v1.Mutation;
import io.fencekeeper.v1.PutRequest;
import io.fencekeeper.v1.RangeRequest;
import io.fencekeeper.v1.RangeResponse;
import io.fencekeeper.v1.TxnRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;

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

  /**
   * One write of a batch, with its own token and options: a put of value, or, with value null, a delete
   * of key. Make it with Store.batchPut or Store.batchDelete.
   */
  public record BatchWrite(Token token, String key, byte[] value, WriteOptions options) {}

  /**
   * The answer to one write of a batch: what its put or delete alone would have given. Exactly one of
   * commit (where it committed) and error (the typed exception it alone would have thrown) is set.
   */
  public record BatchResult(Commit commit, FencekeeperException error) {}

  /** At most this many writes, and this many bytes of values, in one batch. */
  public static final int MAX_BATCH_WRITES = 1000;
  public static final int MAX_BATCH_VALUE_BYTES = 2 * 1024 * 1024;

  /** A put of key = value under token, in a batch. */
  public static BatchWrite batchPut(Token token, String key, byte[] value, WriteOptions o) {
    return new BatchWrite(token, key, Objects.requireNonNull(value, "a put needs a value"), o);
  }

  /** A delete of key under token, in a batch. */
  public static BatchWrite batchDelete(Token token, String key, WriteOptions o) {
    return new BatchWrite(token, key, null, o);
  }

  private final Calls calls;
  /** Null: one call a write (FencekeeperClient.Builder.coalesceWrites(false)). */
  private final WriteBatcher batcher;
  /** Null when nobody listens to events. */
  private final Consumer<ClientEvent> events;

  Store(Calls calls, boolean coalesceWrites, Consumer<ClientEvent> events) {
    this.calls = calls;
    this.batcher = coalesceWrites ? new WriteBatcher(calls, events) : null;
    this.events = events;
  }

  /** A put inside a txn. */
  public static TxnOp putOp(String key, byte[] value) {
    return new TxnOp(key, Objects.requireNonNull(value, "a put needs a value").clone());
  }

  /** A delete inside a txn. */
  public static TxnOp deleteOp(String key) {
    return new TxnOp(key, null);
  }

  /**
   * Writes key = value under token. Concurrent puts and deletes of one client share calls unless
   * FencekeeperClient.Builder.coalesceWrites(false): each still gets exactly its own answer or exception.
   * Blocks until answered; canceling the caller's gRPC Context, or interrupting the thread, ends the wait.
   */
  public Commit put(Token token, String key, byte[] value, WriteOptions o) {
    PutRequest req = PutRequest.newBuilder().setResource(token.getResource()).setKey(key).setValue(ByteString.copyFrom(value))
        .setMutation(mutation(token, o)).build();
    if (batcher != null && batcher.batches()) return Commit.of(batcher.write(io.fencekeeper.v1.BatchWrite.newBuilder().setPut(req).build()));
    return Commit.of(write(s -> {
      sent(s.url(), 1);
      return s.store().put(req);
    }).getCommit());
  }

  /** Deletes key under token; coalesced with other writes as put is. */
  public Commit delete(Token token, String key, WriteOptions o) {
    DeleteRequest req = DeleteRequest.newBuilder().setResource(token.getResource()).setKey(key).setMutation(mutation(token, o)).build();
    if (batcher != null && batcher.batches()) return Commit.of(batcher.write(io.fencekeeper.v1.BatchWrite.newBuilder().setDelete(req).build()));
    return Commit.of(write(s -> {
      sent(s.url(), 1);
      return s.store().delete(req);
    }).getCommit());
  }

  /** Several puts and deletes under one token, all or nothing (Store.putOp, Store.deleteOp). */
  public Commit txn(Token token, List<TxnOp> ops, WriteOptions o) {
    TxnRequest req = TxnRequest.newBuilder().setResource(token.getResource()).addAllOps(ops.stream().map(Protos::txnOp).toList()).setMutation(mutation(token, o)).build();
    return Commit.of(write(s -> s.store().txn(req)).getCommit());
  }

  /** @deprecated the generated type: use put(Token, ...). */
  @Deprecated
  public Commit put(FencingToken token, String key, byte[] value, WriteOptions o) {
    return put(Protos.token(token), key, value, o);
  }

  /** @deprecated the generated type: use delete(Token, ...). */
  @Deprecated
  public Commit delete(FencingToken token, String key, WriteOptions o) {
    return delete(Protos.token(token), key, o);
  }

  /**
   * Sends many independent puts and deletes in one FencedStoreService.Batch call (at most 1000 writes
   * and 2 MiB of values), each judged and applied on its own: result i answers writes.get(i). Not a
   * transaction (txn is): one write's refusal leaves the others be, and two writes of one key in a batch
   * may apply in either order. Throws only for the whole call (over its bounds, no server, or
   * UNIMPLEMENTED from a server without Batch); then each write may or may not have applied.
   */
  public List<BatchResult> batch(List<BatchWrite> writes) {
    BatchRequest.Builder req = BatchRequest.newBuilder();
    for (BatchWrite w : writes) {
      WriteOptions o = w.options() != null ? w.options() : WriteOptions.DEFAULT;
      Mutation m = mutation(w.token(), o);
      if (w.value() == null) {
        req.addWritesBuilder().setDelete(DeleteRequest.newBuilder().setResource(w.token().getResource()).setKey(w.key()).setMutation(m));
      } else {
        req.addWritesBuilder().setPut(PutRequest.newBuilder().setResource(w.token().getResource()).setKey(w.key())
            .setValue(ByteString.copyFrom(w.value())).setMutation(m));
      }
    }
    BatchRequest built = req.build();
    BatchResponse res = write(s -> {
      sent(s.url(), writes.size());
      return s.store().batch(built);
    });
    List<BatchResult> out = new ArrayList<>(writes.size());
    for (int i = 0; i < writes.size(); i++) {
      if (i >= res.getResultsCount()) {
        out.add(new BatchResult(null, Errors.from(com.google.rpc.Status.newBuilder().setCode(io.grpc.Status.Code.INTERNAL.value())
            .setMessage("the server gave no answer for write " + i + " of a batch of " + writes.size()).build())));
        continue;
      }
      io.fencekeeper.v1.BatchResult r = res.getResults(i);
      out.add(r.hasCommit() ? new BatchResult(Commit.of(r.getCommit()), null) : new BatchResult(null, Errors.from(r.getError())));
    }
    return out;
  }

  /** Reads a key; needs no token. */
  public Value get(String resource, String key) {
    GetRequest req = GetRequest.newBuilder().setResource(resource).setKey(key).build();
    GetResponse res = calls.run(s -> s.store().get(req), true);
    return new Value(res.getFound(), res.getValue(), res.getModRevision(), res.getFence());
  }

  /** One entry of the store (list): its key, its value (empty with keysOnly), and the revision that last wrote it. */
  public record Entry(String key, ByteString value, long modRevision) {
    /** The value as UTF-8 text. */
    public String text() {
      return value.toStringUtf8();
    }
  }

  /** Every entry of a resource under a prefix ("" for all), in key order, read a page at a time from one snapshot; needs no token. */
  public List<Entry> list(String resource, String prefix) {
    return list(resource, prefix, false);
  }

  /** list(resource, prefix), with keysOnly: the keys and revisions without the values. */
  public List<Entry> list(String resource, String prefix, boolean keysOnly) {
    List<Entry> out = new ArrayList<>();
    String pageToken = "";
    do {
      RangeRequest req = RangeRequest.newBuilder().setResource(resource).setPrefix(prefix).setPageToken(pageToken).setKeysOnly(keysOnly).build();
      RangeResponse page = calls.run(s -> s.store().range(req), true);
      for (io.fencekeeper.v1.Entry e : page.getEntriesList()) out.add(new Entry(e.getKey(), e.getValue(), e.getModRevision()));
      pageToken = page.getNextPageToken();
    } while (!pageToken.isEmpty());
    return out;
  }

  /** The resource's fence and the greatest generation issued; needs no token. */
  public Fence fence(String resource) {
    GetFenceResponse res = calls.run(s -> s.store().getFence(GetFenceRequest.newBuilder().setResource(resource).build()), true);
    return new Fence(res.getFence(), res.getLastIssued());
  }

  /** A write call: one cut off under a caller that canceled nothing is an UnavailableException (Errors.cutOff). */
  private <T> T write(Function<Calls.Stubs, T> call) {
    try {
      return calls.run(call, false);
    } catch (CanceledException e) {
      if (io.grpc.Context.current().isCancelled() || Thread.currentThread().isInterrupted()) throw e;
      throw Errors.cutOff(e);
    }
  }

  private void sent(String url, int writes) {
    if (events != null) events.accept(new ClientEvent.WritesSent(url, writes));
  }

  private static Mutation mutation(Token token, WriteOptions o) {
    Objects.requireNonNull(token, "a write needs a token");
    Mutation.Builder m = Mutation.newBuilder().setToken(Protos.proto(token)).setMode(Protos.mode(o.mode()));
    if (o.idempotencyKey() != null) m.setIdempotencyKey(o.idempotencyKey());
    return m.build();
  }
}
