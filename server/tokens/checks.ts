// What a token presented for a write or a release must be: signed by this deployment when the server
// requires it (authentication on) or whenever it carries a signature, and, with authentication on, the
// caller's own (the signed principal), unless the caller administers the resource.
import { notHolder } from "../errors/errors.js";
import type { Token } from "./token.js";
import type { TokenSigner } from "./signer.js";

export class TokenChecks {
  constructor(
    private readonly signer: TokenSigner,
    /** Unsigned tokens are refused (authentication on: a token's principal must be proven). */
    private readonly requireSigned: boolean,
  ) {}

  /** principal: the caller that must hold the token; undefined: anyone may (no authentication, or an admin). */
  async check(t: Token, principal: string | undefined, what = "mutation.token"): Promise<void> {
    if (this.requireSigned || (t.signature?.length ?? 0) > 0) await this.signer.verify(t, what);
    if (principal !== undefined && t.principal !== principal) {
      throw notHolder(`the token of generation ${t.generation} of "${t.resource}" (lease ${t.leaseId})`, principal, {
        resource: t.resource,
        generation: String(t.generation),
        lease_id: String(t.leaseId),
      });
    }
  }
}
