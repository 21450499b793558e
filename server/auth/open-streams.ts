// The streams open now (KeepAlive, Observe), with the authority each was opened under: a stream is
// authenticated and authorized once, when it opens, and may stay open for days. So that it does not
// outlive that authority:
// - it ends with UNAUTHENTICATED when the credentials it was opened with stop being accepted (a JWT's
//   "exp", a client certificate's notAfter): one timer a stream, cleared when it ends;
// - at each policy reload, every open stream's principal is authorized again for the stream's verb on
//   its resources, and a stream no longer granted ends with PERMISSION_DENIED. (A KeepAlive stream names
//   no resource: the leases it renews are judged one by one, renewal-grants.ts.)
// - when the JWT verification keys are reloaded, every stream opened with a token is authenticated
//   again, and one whose token no longer verifies (its key was taken out) ends with UNAUTHENTICATED,
//   as its next call would be refused.
// A client that reconnects with fresh credentials, still granted, carries on where it was. How a stream
// ended is in the request log and the call metrics, as for any call.
import { DomainError } from "../errors/errors.js";
import { atTime } from "../lease/long-timeout.js";
import type { Socket } from "node:net";
import type { Authenticator } from "./authenticator.js";
import type { PolicyFile } from "./policy-file.js";
import { authorize, describePrincipal, type Policy, type Verb } from "./policy.js";
import type { Principal } from "./principal.js";

export interface StreamAuthority {
  /** The RPC, for messages and logs: "KeepAlive", "Observe". */
  readonly method: string;
  readonly principal: Principal;
  /** What the policy must go on granting for the stream to stay open: a verb (or admin) on each resource. */
  readonly grants: readonly { verb: Verb; resource: string }[];
  /** When its credentials stop being accepted (ms since 1970); undefined: never (no authentication). */
  readonly expiresAt: number | undefined;
  /** What it was authenticated from, to authenticate it again when the keys change. */
  readonly credentials?: { authorization: string | undefined; socket: Socket };
}

interface Entry extends StreamAuthority {
  end(err: DomainError): void;
}

export class OpenStreams {
  private readonly open = new Set<Entry>();

  constructor(
    private readonly policy: PolicyFile | undefined,
    private readonly authenticator?: Authenticator,
  ) {
    policy?.onReload((p) => this.recheck(p));
  }

  /** How many streams are open. */
  get size(): number {
    return this.open.size;
  }

  /**
   * Runs one stream's body under its authority. The body gets a signal that aborts when the call ends or
   * the authority does; in the second case the stream ends with the error that says why, at once, without
   * waiting for the body's next message.
   */
  run<T>(authority: StreamAuthority, signal: AbortSignal, body: (signal: AbortSignal) => AsyncGenerator<T>): AsyncGenerator<T> {
    // Nothing can end it (no credentials, no policy): the body itself, without a generator around it
    // (a hop of promises per message).
    if (authority.expiresAt === undefined && this.policy === undefined) return body(signal);
    return this.guarded(authority, signal, body);
  }

  private async *guarded<T>(authority: StreamAuthority, signal: AbortSignal, body: (signal: AbortSignal) => AsyncGenerator<T>): AsyncGenerator<T> {
    const abort = new AbortController();
    const onAbort = () => abort.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    let endedWith: DomainError | undefined;
    /** Rejects the wait for the body's next message, if one is under way. */
    let interrupt: ((err: DomainError) => void) | undefined;
    const entry: Entry = {
      ...authority,
      end: (err) => {
        if (!this.open.delete(entry)) return;
        endedWith = err;
        abort.abort(err);
        interrupt?.(err);
      },
    };
    this.open.add(entry);
    const cancelTimer = authority.expiresAt !== undefined ? atTime(authority.expiresAt, () => entry.end(expired(authority))) : undefined;
    const it = body(abort.signal);
    try {
      for (;;) {
        if (endedWith) throw endedWith;
        // A promise per message, not Promise.race with one long-lived promise: that would keep a callback
        // per message on it for the stream's whole life.
        const r = await new Promise<IteratorResult<T>>((resolve, reject) => {
          interrupt = reject;
          it.next().then(resolve, reject);
        });
        interrupt = undefined;
        if (r.done) return;
        yield r.value;
      }
    } finally {
      this.open.delete(entry);
      cancelTimer?.();
      signal.removeEventListener("abort", onAbort);
      abort.abort();
      // Queued behind a pending next() when the stream was ended: it then finishes the body's cleanup.
      it.return(undefined as never).catch(() => {});
    }
  }

  /**
   * After the JWT verification keys were reloaded: ends each stream opened with a token that no longer
   * verifies. Resolves once every stream was judged.
   */
  async reauthenticate(): Promise<void> {
    const authenticator = this.authenticator;
    if (!authenticator) return;
    await Promise.all(
      [...this.open]
        .filter((s) => s.principal.via === "jwt" && s.credentials)
        .map(async (s) => {
          try {
            await authenticator.authenticate(s.credentials!.authorization, s.credentials!.socket);
          } catch (err) {
            if (!(err instanceof DomainError)) throw err;
            s.end(new DomainError(err.kind, `the ${s.method} stream's credentials are no longer accepted, after the server's keys changed: ${err.message}; reconnect with fresh ones`, err.reason, { ...err.metadata }));
          }
        }),
    );
  }

  /** Judges every open stream by the policy now in force. */
  private recheck(policy: Policy): void {
    for (const s of [...this.open]) {
      const denied = s.grants.find((g) => !policy.allows(s.principal, g.verb, g.resource) && !policy.allows(s.principal, "admin", g.resource));
      if (denied) s.end(withdrawn(policy, s, denied.verb, denied.resource));
    }
  }
}

function expired(s: StreamAuthority): DomainError {
  const at = new Date(s.expiresAt!).toISOString();
  const what = s.principal.via === "mtls" ? "client certificate" : "bearer token";
  return new DomainError(
    "unauthenticated",
    `the ${s.method} stream's credentials expired at ${at} (its ${what} of ${describePrincipal(s.principal)}); reconnect with fresh ones`,
    "UNAUTHENTICATED",
    { problem: "expired", principal: s.principal.name, expired_at: at },
  );
}

function withdrawn(policy: Policy, s: StreamAuthority, verb: Verb, resource: string): DomainError {
  try {
    authorize(policy, s.principal, verb, resource);
  } catch (err) {
    if (err instanceof DomainError) {
      return new DomainError(err.kind, `the policy changed, ending this ${s.method} stream: ${err.message}`, err.reason, { ...err.metadata });
    }
  }
  return new DomainError("permission_denied", `the policy changed: ${describePrincipal(s.principal)} may no longer ${verb} ${JSON.stringify(resource)}`, "PERMISSION_DENIED", {
    principal: s.principal.name,
    verb,
    resource,
  });
}
