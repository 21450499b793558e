package io.fencekeeper.conformance;

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
 * Offline verification of a fencing token's signature (docs/verifying-tokens.md): whoever holds the
 * server's public keys (LeaseService.ListTokenKeys) can check, without asking the server, that fencekeeper
 * issued exactly this generation of this resource to this principal. Needs only java.security (Java 15 or
 * newer) and the generated FencingToken: copy it as it is.
 */
public final class Verify {
  /** The outcome: OK, or why the token does not verify. */
  public enum Outcome {
    OK,
    /** No signature: the server runs without keys, or it was stripped. */
    NOT_SIGNED,
    /** Fetch the keys again (ListTokenKeys); still unknown: not ours. */
    UNKNOWN_KEY_ID,
    /** Altered, or signed by someone else. */
    BAD_SIGNATURE
  }

  /** The X.509 SubjectPublicKeyInfo header of an Ed25519 key (RFC 8410); the raw 32 bytes follow it. */
  private static final byte[] ED25519_SPKI_PREFIX = HexFormat.of().parseHex("302a300506032b6570032100");

  private Verify() {}

  /**
   * Checks token's Ed25519 signature with the key its key_id names among keys (key id to raw 32-byte
   * public key). OK means fencekeeper issued this token, exactly as it is. It says nothing about whether
   * the token is still the newest: compare its generation with your own fence for that.
   */
  public static Outcome verify(FencingToken token, Map<String, byte[]> keys) {
    if (token.getSignature().isEmpty()) return Outcome.NOT_SIGNED;
    byte[] raw = keys.get(token.getKeyId());
    if (raw == null || raw.length != 32) return Outcome.UNKNOWN_KEY_ID;
    try {
      byte[] spki = ByteBuffer.allocate(ED25519_SPKI_PREFIX.length + raw.length).put(ED25519_SPKI_PREFIX).put(raw).array();
      PublicKey key = KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(spki));
      Signature verifier = Signature.getInstance("Ed25519");
      verifier.initVerify(key);
      verifier.update(canonicalToken(token));
      return verifier.verify(token.getSignature().toByteArray()) ? Outcome.OK : Outcome.BAD_SIGNATURE;
    } catch (SignatureException e) {
      return Outcome.BAD_SIGNATURE; // a signature that is not even 64 bytes
    } catch (GeneralSecurityException e) {
      throw new IllegalArgumentException("key " + token.getKeyId() + " is not an Ed25519 public key", e);
    }
  }

  /**
   * What the signature covers: for each field, its length in bytes (4 bytes, big endian) and its UTF-8
   * bytes, so that no field can run into the next; then, for a mode other than unset (0) and exclusive
   * (1), the mode's number ("2": shared).
   */
  static byte[] canonicalToken(FencingToken t) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    List<String> fields = new ArrayList<>(List.of(
        "fencekeeper-token-v1", t.getResource(), Long.toString(t.getGeneration()), Long.toString(t.getLeaseId()),
        t.getPrincipal(), t.getKeyId()));
    if (t.getModeValue() != 0 && t.getModeValue() != 1) fields.add(Integer.toString(t.getModeValue()));
    for (String field : fields) {
      byte[] bytes = field.getBytes(StandardCharsets.UTF_8);
      out.writeBytes(ByteBuffer.allocate(4).putInt(bytes.length).array());
      out.writeBytes(bytes);
    }
    return out.toByteArray();
  }
}
