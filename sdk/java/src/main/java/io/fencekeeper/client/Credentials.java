package io.fencekeeper.client;

import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * How the client proves who it is to a server with authentication on (docs/authentication.md): a
 * bearer JWT, sent as "authorization: Bearer JWT" on every call, streams included (also over cleartext,
 * for a loopback server); and, for https:// servers, the CA that the server's certificate must chain to
 * (null: the system's) and a client certificate with its key (mutual TLS). All PEM files. Any may be null.
 */
public record Credentials(Supplier<String> bearer, Path ca, Path cert, Path key) {
  public static final Credentials NONE = new Credentials(null, null, null, null);

  /** A fixed bearer JWT. */
  public static Credentials bearer(String jwt) {
    return new Credentials(() -> jwt, null, null, null);
  }

  /** Mutual TLS: a client certificate and its key, and the CA of the server's certificate (null: the system's). */
  public static Credentials tls(Path ca, Path cert, Path key) {
    return new Credentials(null, ca, cert, key);
  }

  /** The same, with this bearer JWT supplier (called on every call: keep it cheap). */
  public Credentials withBearer(Supplier<String> jwt) {
    return new Credentials(jwt, ca, cert, key);
  }
}
