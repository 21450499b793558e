package io.fencekeeper.client;

import com.google.protobuf.ByteString;
import io.fencekeeper.v1.AcquireMode;
import io.fencekeeper.v1.FencingToken;
import io.fencekeeper.v1.TxnDelete;
import io.fencekeeper.v1.TxnPut;

/** The boundary between the library's own types and the generated protobuf ones, which stay internal. */
final class Protos {
  private Protos() {}

  static Token token(FencingToken t) {
    if (t == null) return null;
    return new Token(t.getResource(), t.getGeneration(), t.getLeaseId(), t.getPrincipal(), t.getKeyId(), t.getSignature().toByteArray(),
        t.getMode() == AcquireMode.ACQUIRE_MODE_SHARED);
  }

  static Description.Holder holder(io.fencekeeper.v1.Holder h) {
    return new Description.Holder(h.getHolder(), token(h.getToken()),
        h.hasTtl() ? java.time.Duration.ofSeconds(h.getTtl().getSeconds(), h.getTtl().getNanos()) : null,
        h.getHolderPrincipal().isEmpty() ? null : h.getHolderPrincipal(), h.getValue());
  }

  static java.util.List<Description.Holder> holders(java.util.List<io.fencekeeper.v1.Holder> hs) {
    return hs.stream().map(Protos::holder).toList();
  }

  static java.time.Instant instant(com.google.protobuf.Timestamp t) {
    return java.time.Instant.ofEpochSecond(t.getSeconds(), t.getNanos());
  }

  static FencingToken proto(Token t) {
    return FencingToken.newBuilder().setResource(t.getResource()).setGeneration(t.getGeneration()).setLeaseId(t.getLeaseId())
        .setPrincipal(t.getPrincipal()).setKeyId(t.getKeyId()).setSignature(ByteString.copyFrom(t.signatureBytes()))
        // Signed: a shared token sent without its mode would not verify.
        .setMode(t.isShared() ? AcquireMode.ACQUIRE_MODE_SHARED : AcquireMode.ACQUIRE_MODE_UNSPECIFIED).build();
  }

  static io.fencekeeper.v1.FenceMode mode(FenceMode m) {
    if (m == null) return io.fencekeeper.v1.FenceMode.FENCE_MODE_UNSPECIFIED;
    return m == FenceMode.ORDER ? io.fencekeeper.v1.FenceMode.FENCE_MODE_ORDER : io.fencekeeper.v1.FenceMode.FENCE_MODE_LIVE;
  }

  /** The generated FenceMode as the library's (deprecated overloads); unset is ORDER, as the server takes it. */
  static FenceMode mode(io.fencekeeper.v1.FenceMode m) {
    return m == io.fencekeeper.v1.FenceMode.FENCE_MODE_LIVE ? FenceMode.LIVE : FenceMode.ORDER;
  }

  static io.fencekeeper.v1.TxnOp txnOp(TxnOp op) {
    return op.isDelete()
        ? io.fencekeeper.v1.TxnOp.newBuilder().setDelete(TxnDelete.newBuilder().setKey(op.key())).build()
        : io.fencekeeper.v1.TxnOp.newBuilder().setPut(TxnPut.newBuilder().setKey(op.key()).setValue(ByteString.copyFrom(op.value()))).build();
  }
}
