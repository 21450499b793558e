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

// C0 and C1 control characters, including NUL and DEL; and a lone surrogate, which UTF-8 cannot hold.
const UNFIT = /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why a name cannot be a principal's, or undefined when it can. A control character would forge lines in
 * logs and tell two names apart that a person reads as one; a lone surrogate is written to etcd as U+FFFD,
 * so two different names would be bound as the same one.
 */
export function unfitName(name: string): string | undefined {
  const m = UNFIT.exec(name);
  if (!m) return undefined;
  const code = `U+${m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`;
  return m[0] >= "\ud800" && m[0] <= "\udfff"
    ? `a lone surrogate (${code}) at position ${m.index}, which is not valid UTF-8`
    : `the control character ${code} at position ${m.index}; a principal's name may not contain control characters`;
}
