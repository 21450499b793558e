package io.fencekeeper.client;

import java.security.PublicKey;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * The server's token keys for offline verification: fetched on first use (the fetch is usually
 * client::tokenKeys) and again when a token names a key id not among them, at most once per minRefresh
 * however many do, so that a flood of forged key ids costs the server one ListTokenKeys a period.
 */
public final class TokenKeyCache {
  /** The keys were needed (the token names an unknown key id) and could not be fetched. */
  public static final class KeysUnavailableException extends Exception {
    KeysUnavailableException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private final Callable<Map<String, PublicKey>> fetch;
  private final long minRefreshNanos;
  private Map<String, PublicKey> keys = Map.of();
  private long lastFetch;
  private boolean fetched;
  private Exception lastError;
  private long fetches;

  public TokenKeyCache(Callable<Map<String, PublicKey>> fetch, Duration minRefresh) {
    this.fetch = fetch;
    this.minRefreshNanos = minRefresh.toNanos();
  }

  /** Verifies the token's signature, fetching the keys as the class says. */
  public Tokens.Verification verify(Token token) throws KeysUnavailableException {
    Tokens.Verification v = Tokens.verifyToken(token, keys(false));
    if (v == Tokens.Verification.UNKNOWN_KEY_ID) {
      Map<String, PublicKey> fresh = keys(true);
      v = Tokens.verifyToken(token, fresh);
      Exception error = lastError();
      if (v == Tokens.Verification.UNKNOWN_KEY_ID && error != null) {
        throw new KeysUnavailableException("key id \"" + token.getKeyId() + "\" unknown and the keys could not be fetched: " + error, error);
      }
    }
    return v;
  }

  /** How many times the keys were fetched. */
  public synchronized long fetches() {
    return fetches;
  }

  private synchronized Exception lastError() {
    return lastError;
  }

  // Synchronized across the fetch: concurrent callers wait for it, then find it fresh.
  private synchronized Map<String, PublicKey> keys(boolean stale) {
    long now = System.nanoTime();
    if (!fetched || (stale && now - lastFetch >= minRefreshNanos)) {
      fetched = true;
      lastFetch = now; // before the call: a failing fetch also waits its turn
      fetches++;
      try {
        keys = Map.copyOf(fetch.call());
        lastError = null;
      } catch (Exception e) {
        lastError = e;
      }
    }
    return keys;
  }
}
