// What a token presented for a write or a release must be: signed by this deployment whenever it
// carries a signature, and, with authentication on, the caller's own (the signed principal) and signed,
// unless the caller administers the resource. An admin may act under anyone's token of the resource,
// yet never receives another principal's signature (disclosure.ts): it presents the token Describe
// showed it, unsigned. Its release still names exactly one holding (the transaction compares the
// holder's key), and its write still meets the fence and the generations issued.
import { notHolder } from "../errors/errors.js";
import type { Token } from "./token.js";
import type { TokenSigner } from "./signer.js";

export class TokenChecks {
  constructor(
    private readonly signer: TokenSigner,
    /** Unsigned tokens are refused (authentication on: a token's principal must be proven). */
    private readonly requireSigned: boolean,
  ) {}

  /**
   * principal: the caller that must hold the token, which must then be signed when the server requires
   * it; undefined: anyone may (no authentication, or an admin), and an unsigned token is taken.
   */
  async check(t: Token, principal: string | undefined, what = "mutation.token"): Promise<void> {
    if ((this.requireSigned && principal !== undefined) || (t.signature?.length ?? 0) > 0) await this.signer.verify(t, what);
    if (principal !== undefined && t.principal !== principal) {
      throw notHolder(`the token of generation ${t.generation} of "${t.resource}" (lease ${t.leaseId})`, principal, {
        resource: t.resource,
        generation: String(t.generation),
        lease_id: String(t.leaseId),
      });
    }
  }
}
