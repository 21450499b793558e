package io.fencekeeper.client;

import com.google.protobuf.InvalidProtocolBufferException;
import io.fencekeeper.v1.AcquireMode;
import io.fencekeeper.v1.FencingToken;
import io.grpc.Status;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Semaphore;

/**
 * A fenced endpoint (docs/fenced-http.md): a service that owns its state and takes writes over HTTP or gRPC
 * refuses a write whose fencing token is stale. The caller sends its token in the Fencing-Token header
 * (headerValue: base64 of the token's protobuf); the endpoint verifies the signature offline
 * (TokenKeyCache), checks that the token is for the resource being written, and asks the service's own
 * FenceStore to admit the generation. FencedServerInterceptor (gRPC) and FencedHttpFilter (the JDK's
 * HttpServer) use it; anything else calls verify, then enter, then admit, and leaves the turn when the
 * write is over.
 */
public final class FencedEndpoint {
  /** The header; gRPC metadata has it in lower case. */
  public static final String HEADER = "Fencing-Token";
  private static final int MAX_HEADER_LENGTH = 8192;

  /** Why a write was refused: an HTTP status, a gRPC code, an ErrorReason name where one fits, words for a person. */
  public static final class Refusal {
    public final int httpStatus;
    public final Status.Code code;
    /** STALE_TOKEN, TOKEN_SIGNATURE_INVALID, SHARED_TOKEN, or null. */
    public final String reason;
    public final String message;
    public final String resource;
    /** The refused token's generation, 0 when no token was read. */
    public final long generation;
    /** On a stale refusal the generation in force; otherwise 0. */
    public final long fence;

    Refusal(int httpStatus, Status.Code code, String reason, String message, String resource, long generation, long fence) {
      this.httpStatus = httpStatus;
      this.code = code;
      this.reason = reason;
      this.message = message;
      this.resource = resource;
      this.generation = generation;
      this.fence = fence;
    }
  }

  /** What verify found: the token, or the refusal. */
  public record Checked(Token token, Refusal refusal) {}

  private final TokenKeyCache keys;
  private final FenceStore store;
  private final Map<String, Turn> turns = new HashMap<>();

  private static final class Turn {
    // A semaphore, not a lock: a gRPC call may take its turn on one thread and leave it on another.
    final Semaphore permit = new Semaphore(1, true);
    int users;
  }

  public FencedEndpoint(TokenKeyCache keys, FenceStore store) {
    this.keys = keys;
    this.store = store;
  }

  /** The Fencing-Token header for a token: base64 of its protobuf, signature and mode included. */
  public static String headerValue(Token token) {
    return Base64.getEncoder().encodeToString(Protos.proto(token).toByteArray());
  }

  /** Decodes a Fencing-Token header (base64 or base64url); IllegalArgumentException says what is wrong. */
  public static Token parseHeader(String value) {
    String text = value.strip();
    if (text.length() > MAX_HEADER_LENGTH) throw new IllegalArgumentException("the " + HEADER + " header is " + text.length() + " characters, more than any token");
    byte[] raw;
    try {
      raw = (text.contains("-") || text.contains("_") ? Base64.getUrlDecoder() : Base64.getDecoder()).decode(text);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("the " + HEADER + " header is not base64: send FencedEndpoint.headerValue(lease.token())");
    }
    FencingToken p;
    try {
      p = FencingToken.parseFrom(raw);
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalArgumentException("the " + HEADER + " header is base64 but not a FencingToken protobuf: " + e.getMessage());
    }
    if (p.getResource().isEmpty()) throw new IllegalArgumentException("the " + HEADER + " header's token names no resource");
    if (p.getGeneration() <= 0) throw new IllegalArgumentException("the " + HEADER + " header's token has generation " + p.getGeneration() + "; generations are positive");
    if (p.getMode() == AcquireMode.UNRECOGNIZED) throw new IllegalArgumentException("the " + HEADER + " header's token has mode " + p.getModeValue() + ", which is not an AcquireMode");
    return Protos.token(p);
  }

  /** The header, signature, resource and mode: everything but the store. header is null when absent. */
  public Checked verify(String header, String resource) {
    if (header == null || header.isEmpty()) {
      return refused(new Refusal(400, Status.Code.INVALID_ARGUMENT, null, "a write to \"" + resource + "\" needs its fencing token in the " + HEADER
          + " header (FencedEndpoint.headerValue(lease.token()))", resource, 0, 0));
    }
    Token t;
    try {
      t = parseHeader(header);
    } catch (IllegalArgumentException e) {
      return refused(new Refusal(400, Status.Code.INVALID_ARGUMENT, null, e.getMessage(), resource, 0, 0));
    }
    // The signature first: a token fencekeeper did not issue never reaches the store.
    Tokens.Verification v;
    try {
      v = keys.verify(t);
    } catch (TokenKeyCache.KeysUnavailableException e) {
      return refused(about(t, 503, Status.Code.UNAVAILABLE, null, "cannot check the token's signature now: " + e.getMessage() + "; try again"));
    }
    if (v != Tokens.Verification.OK) {
      return refused(about(t, 403, Status.Code.PERMISSION_DENIED, "TOKEN_SIGNATURE_INVALID",
          "the fencing token's signature does not verify (" + v + "): send the token exactly as Acquire returned it"));
    }
    if (!t.getResource().equals(resource)) {
      return refused(about(t, 403, Status.Code.PERMISSION_DENIED, null, "the fencing token is for \"" + t.getResource() + "\", and this request writes \""
          + resource + "\": a resource's generations say nothing about another's"));
    }
    if (t.isShared()) {
      return refused(about(t, 403, Status.Code.PERMISSION_DENIED, "SHARED_TOKEN", "a shared token (generation " + t.getGeneration() + " of \"" + resource
          + "\") cannot write: writes need an exclusive acquisition's token"));
    }
    return new Checked(t, null);
  }

  /** The store's verdict on a verified token: null when admitted, else the refusal (409 stale, 503 store failed). */
  public Refusal admit(Token t) {
    FenceStore.Verdict verdict;
    try {
      verdict = store.admit(t.getResource(), t.getGeneration());
    } catch (Exception e) {
      return about(t, 503, Status.Code.UNAVAILABLE, null, "the fence store did not answer: " + e + "; try again");
    }
    if (verdict.admitted()) return null;
    return new Refusal(409, Status.Code.FAILED_PRECONDITION, "STALE_TOKEN", "stale fencing token: generation " + verdict.fence() + " of \"" + t.getResource()
        + "\" has written since generation " + t.getGeneration() + "; this holder has lost its lease and must stop", t.getResource(), t.getGeneration(), verdict.fence());
  }

  /**
   * Takes the resource's turn: one admitted request of a resource at a time in this process, from admit
   * until the write is over, so that an older generation admitted just before a newer one cannot finish
   * its write after it. Close the answer when the write is over.
   */
  public AutoCloseable enter(String resource) {
    Turn turn;
    synchronized (turns) {
      turn = turns.computeIfAbsent(resource, r -> new Turn());
      turn.users++;
    }
    turn.permit.acquireUninterruptibly();
    boolean[] left = {false};
    return () -> {
      if (left[0]) return;
      left[0] = true;
      turn.permit.release();
      synchronized (turns) {
        if (--turn.users == 0) turns.remove(resource);
      }
    };
  }

  private static Checked refused(Refusal r) {
    return new Checked(null, r);
  }

  private static Refusal about(Token t, int http, Status.Code code, String reason, String message) {
    return new Refusal(http, code, reason, message, t.getResource(), t.getGeneration(), 0);
  }
}
