package io.fencekeeper.client;

import io.fencekeeper.v1.FencingToken;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.SignatureException;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * Offline verification of a token's signature (docs/verifying-tokens.md): a resource outside
 * fencekeeper that holds the server's public keys (FencekeeperClient.tokenKeys) checks, without asking
 * the server, that fencekeeper issued exactly this generation of this resource to this principal. Java's
 * own EdDSA (Java 15 or newer), no other library.
 */
public final class Tokens {
  /** What verifyToken finds: OK, or why the token does not verify. */
  public enum Verification {
    OK,
    /** No signature: stripped, or from a server without signing keys. */
    NOT_SIGNED,
    /** Fetch the keys again (tokenKeys); still unknown: not ours. */
    UNKNOWN_KEY_ID,
    /** Altered, or signed by someone else. */
    BAD_SIGNATURE
  }

  /** The X.509 SubjectPublicKeyInfo header of an Ed25519 key (RFC 8410); the raw 32 bytes follow it. */
  private static final byte[] ED25519_SPKI_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");

  private Tokens() {}

  /**
   * Checks token's Ed25519 signature with the key its key_id names among keys. OK means fencekeeper
   * issued this token exactly as it is; it says nothing about whether the token is still the newest:
   * compare its generation with your own fence for that.
   */
  public static Verification verifyToken(Token token, Map<String, PublicKey> keys) {
    if (token.signatureBytes().length == 0) return Verification.NOT_SIGNED;
    PublicKey key = keys.get(token.getKeyId());
    if (key == null) return Verification.UNKNOWN_KEY_ID;
    try {
      Signature verifier = Signature.getInstance("Ed25519");
      verifier.initVerify(key);
      verifier.update(canonicalToken(token));
      return verifier.verify(token.signatureBytes()) ? Verification.OK : Verification.BAD_SIGNATURE;
    } catch (SignatureException e) {
      return Verification.BAD_SIGNATURE; // a signature that is not even 64 bytes
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("key " + token.getKeyId() + " is not an Ed25519 public key", e);
    }
  }

  /**
   * What the signature covers: for each field ("fencekeeper-token-v1", resource, generation and lease id
   * in decimal, principal, key id), its length in bytes (4 bytes, big endian) and its UTF-8 bytes, so
   * that no field can run into the next; then, for a mode other than unset and exclusive (a shared
   * token: "2"), the mode's number, so that a shared token never verifies as an exclusive one.
   */
  public static byte[] canonicalToken(Token t) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    List<String> fields = new ArrayList<>(List.of(
        "fencekeeper-token-v1", t.getResource(), Long.toString(t.getGeneration()), Long.toString(t.getLeaseId()),
        t.getPrincipal(), t.getKeyId()));
    if (t.isShared()) fields.add(Integer.toString(io.fencekeeper.v1.AcquireMode.ACQUIRE_MODE_SHARED_VALUE));
    for (String field : fields) {
      byte[] bytes = field.getBytes(StandardCharsets.UTF_8);
      out.writeBytes(ByteBuffer.allocate(4).putInt(bytes.length).array());
      out.writeBytes(bytes);
    }
    return out.toByteArray();
  }

  /** @deprecated the generated type: use verifyToken(Token, keys). */
  @Deprecated
  public static Verification verifyToken(FencingToken token, Map<String, PublicKey> keys) {
    return verifyToken(Protos.token(token), keys);
  }

  /** A raw 32-byte Ed25519 public key (TokenKey.public_key) as a Java PublicKey. */
  public static PublicKey ed25519PublicKey(byte[] raw) {
    if (raw.length != 32) throw new IllegalArgumentException("an Ed25519 public key has 32 bytes, got " + raw.length);
    byte[] spki = ByteBuffer.allocate(ED25519_SPKI_PREFIX.length + raw.length).put(ED25519_SPKI_PREFIX).put(raw).array();
    try {
      return KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(spki));
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("not an Ed25519 public key", e);
    }
  }
}
