// Who is calling: the identity authentication established for a call, and what authorization reads.

export interface Principal {
  /** The identity, as policies and holder bindings name it: a certificate's URI SAN (a SPIFFE id), else its subject CN; or a JWT's subject. */
  readonly name: string;
  /** How it was established. "anonymous": the server runs without authentication. */
  readonly via: "mtls" | "jwt" | "anonymous";
  /** Groups the identity belongs to (a JWT's groups claim); empty otherwise. */
  readonly groups: readonly string[];
  /** A JWT's claims, for policies that match on a claim; empty otherwise. */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** The principal of every call when the server runs without authentication. */
export const ANONYMOUS: Principal = Object.freeze({ name: "", via: "anonymous", groups: [], claims: {} });
