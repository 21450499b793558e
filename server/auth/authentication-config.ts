// How callers are identified, as configured: the settings that config.ts reads from the command line and
// authenticator.ts acts on. Apart from both, so that each imports them without importing the other.

export interface JwtConfig {
  /** Files with the verification keys: each a PEM public key (SPKI: RSA, EC or Ed25519), a JWK, or a JWKS ({"keys": [...]}) */
  keyFiles: string[];
  /** The required "iss". */
  issuer: string;
  /** The required "aud" (the token's "aud" contains it). */
  audience: string;
  /** The claim whose string value is the principal's name ("sub" by default at the call site). */
  principalClaim: string;
  /** A string array claim ("groups" by default); a single string counts as one group; absent: no groups. */
  groupsClaim: string;
  /** How far the issuer's clock and ours may disagree on "exp" and "nbf", e.g. 30. */
  clockToleranceSeconds: number;
  /**
   * Longest a token may be valid: "exp" minus "iat", or minus now without "iat" (DEFAULT_JWT_MAX_LIFETIME_SECONDS
   * when unset). A token valid for a year is a password that cannot be changed; refusing it makes a leaked one
   * worthless within this time.
   */
  maxLifetimeSeconds?: number;
  /**
   * Whether a token's principal may look like a URI with an authority ("spiffe://…", "https://…"). Off by
   * default: certificates name their callers by such URIs (the URI SAN), and a token issuer that lets
   * anyone pick their subject would then mint alice's certificate identity; on, the two share one
   * namespace, for an issuer trusted to name SPIFFE ids.
   */
  uriSubjects?: boolean;
}

export interface AuthenticationConfig {
  /** Client certificates identify callers (the server's TLS requires them: --tls-client-ca is set). */
  mtls: boolean;
  jwt?: JwtConfig;
}
