// What a handler sees of its call, whichever adapter brought it (connect's handler context, or the unary
// fast path's own): the signal that ends its work, the time left, and the values the pipeline put there
// (the caller, the policy's decisions: server/auth/access.ts).
import type { ContextValues } from "@connectrpc/connect";

export interface CallContext {
  /** Aborted when the caller goes away, its deadline passes, or the server gives up the call. */
  readonly signal: AbortSignal;
  /** The time left before the caller's deadline, in ms; undefined without one. */
  timeoutMs(): number | undefined;
  /** The call's context values: its caller, what the policy decided (server/auth/access.ts). */
  readonly values: ContextValues;
}
