package io.fencekeeper.client;

import java.util.Arrays;
import java.util.Objects;

/**
 * A fencing token as the library hands it out: the resource, its generation (greater than that of every
 * earlier acquisition of the resource), the etcd lease behind it, whom it was issued to, and the key id
 * and signature that let a resource verify it offline (Tokens.verifyToken). Send it back exactly as it
 * came: an altered one does not verify. A value: equal tokens are equal field by field.
 */
public final class Token {
  private final String resource;
  private final long generation;
  private final long leaseId;
  private final String principal;
  private final String keyId;
  private final byte[] signature;
  private final boolean shared;

  public Token(String resource, long generation, long leaseId, String principal, String keyId, byte[] signature, boolean shared) {
    this.resource = Objects.requireNonNull(resource, "resource");
    this.generation = generation;
    this.leaseId = leaseId;
    this.principal = principal == null ? "" : principal;
    this.keyId = keyId == null ? "" : keyId;
    this.signature = signature == null ? new byte[0] : signature.clone();
    this.shared = shared;
  }

  /** An unsigned exclusive token, as a server without authentication issues them. */
  public static Token of(String resource, long generation, long leaseId) {
    return new Token(resource, generation, leaseId, "", "", new byte[0], false);
  }

  public String getResource() {
    return resource;
  }

  public long getGeneration() {
    return generation;
  }

  /** The etcd lease (or session) that backs this generation. */
  public long getLeaseId() {
    return leaseId;
  }

  /** The authenticated principal it was issued to; "" without authentication. */
  public String getPrincipal() {
    return principal;
  }

  /** The id of the server key that signed it; "" when unsigned. */
  public String getKeyId() {
    return keyId;
  }

  /** The Ed25519 signature (a copy); empty when unsigned. */
  public byte[] getSignature() {
    return signature.clone();
  }

  /** A shared acquisition's token: it reads, and the fenced store refuses its writes (SHARED_TOKEN). */
  public boolean isShared() {
    return shared;
  }

  /** The same token with another generation (e.g. to see that an altered token does not verify). */
  public Token withGeneration(long generation) {
    return new Token(resource, generation, leaseId, principal, keyId, signature, shared);
  }

  byte[] signatureBytes() {
    return signature;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Token t && t.generation == generation && t.leaseId == leaseId && t.shared == shared && t.resource.equals(resource)
        && t.principal.equals(principal) && t.keyId.equals(keyId) && Arrays.equals(t.signature, signature);
  }

  @Override
  public int hashCode() {
    return Objects.hash(resource, generation, leaseId, principal, keyId, shared, Arrays.hashCode(signature));
  }

  @Override
  public String toString() {
    return resource + ":" + generation + ":" + leaseId + (shared ? " (shared)" : "");
  }
}
