// The one pipeline every call runs through, whichever adapter brought it (README.md beside this file):
//
//   1. watched       the request log and the metrics hear of it from its arrival (call-observer.ts);
//                    with tracing on, its span opens then too (tracing.ts)
//   2. authenticated the caller, from its credentials (authentication.ts); without authentication,
//                    the Host the request names (host-rule.ts)
//   3. tracked       for the shutdown's drain, with a signal the shutdown can abort (in-flight.ts)
//   4. authorized    from one table of method -> verb and resource, once per call (authorization.ts);
//                    charged to its caller from one table of method -> budgets (server/budgets/ledger.ts)
//   5. handled       the handler translates protobuf to a domain call and back, nothing more
//   6. mapped        a failure becomes the status the client is told (status.ts, sendable-errors.ts)
//
// Steps 4 to 6 wrap the handlers themselves (handlers() below), so both adapters run the very same code
// for them. Steps 1 to 3 are run by serveUnary() for the unary fast path, and by interceptors() for
// connect, which reads and decodes a request before its interceptors run (connect-adapter.ts tells the
// observers of a call it refuses before them).
import type { DescService } from "@bufbuild/protobuf";
import type { DescMethod } from "@bufbuild/protobuf";
import type { ConnectError, Interceptor } from "@connectrpc/connect";
import type { Socket } from "node:net";
import { CALLER, PEER } from "../auth/access.js";
import type { Authenticator } from "../auth/authenticator.js";
import { authenticate, authenticating, checkHost, hostChecking, hostOf } from "./authentication.js";
import type { HostRule } from "./host-rule.js";
import type { Authorization } from "./authorization.js";
import type { Ledger } from "../budgets/ledger.js";
import type { CallContext } from "./call-context.js";
import { inCallScope } from "./call-scope.js";
import type { CallObserver } from "./call-observer.js";
import { callerFaults } from "./caller-faults.js";
import { toConnectError } from "./status.js";
import type { InFlightCalls } from "./in-flight.js";
import { sendableErrors } from "./sendable-errors.js";
import { tracer } from "../tracing/tracer.js";
import { CallSpan, tracingInterceptor } from "./tracing.js";
import { REQUEST_ID } from "./request-context.js";

type Handler = (req: never, ctx: CallContext) => unknown;

/**
 * Steps 4 to 6: the service's handlers as both adapters run them, each call authorized from the table
 * (when authorization is given and a policy is set), and every failure turned into the status the
 * client gets: a DomainError becomes its code and ErrorInfo, anything unexpected INTERNAL.
 */
export function handlers(service: DescService, impl: object, authorization?: Authorization, ledger?: Ledger): Record<string, Handler> {
  const out: Record<string, Handler> = {};
  for (const method of service.methods) {
    const fn = (impl as Record<string, Handler | undefined>)[method.localName];
    if (typeof fn !== "function") continue;
    const authorize = authorization?.applies(method) ? authorization : undefined;
    if (authorize && (method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming")) {
      throw new Error(`${service.typeName}/${method.name} takes a stream of messages: authorization.ts cannot name its resource from one`);
    }
    out[method.localName] =
      method.methodKind === "unary" || method.methodKind === "client_streaming"
        ? async (req: never, ctx: CallContext) => {
            let spent: ((failed?: ConnectError) => void) | undefined;
            let failed: ConnectError | undefined;
            try {
              authorize?.authorize(method, req, ctx.values);
              spent = ledger?.charge(method, req, ctx.values);
              return await inCallScope(ctx.values, () => fn.call(impl, req, ctx));
            } catch (err) {
              throw (failed = toConnectError(err));
            } finally {
              spent?.(failed);
            }
          }
        : async function* (req: never, ctx: CallContext) {
            let spent: ((failed?: ConnectError) => void) | undefined;
            let failed: ConnectError | undefined;
            try {
              authorize?.authorize(method, req, ctx.values);
              spent = ledger?.charge(method, req, ctx.values);
              yield* fn.call(impl, req, ctx) as AsyncIterable<unknown>;
            } catch (err) {
              throw (failed = toConnectError(err));
            } finally {
              spent?.(failed);
            }
          };
  }
  return out;
}

/** A unary call as the fast path holds it: its context, and how it is stopped from outside. */
export interface StoppableCall extends CallContext {
  /** Rejects with the reason the call was stopped (the caller left, the deadline, the shutdown). */
  readonly stop: Promise<never>;
  /** The reason, once stopped. */
  readonly aborted: ConnectError | undefined;
  abort(reason: ConnectError): void;
}

/** What the fast path knows of a unary call when it arrives. */
export interface UnaryArrival {
  method: DescMethod;
  requestId: string;
  authorization: string | undefined;
  socket: Socket;
  /** One of the request's headers (the trace context's). */
  header(name: string): string | undefined;
  /** Makes the call's context, its deadline running from now; throws on a header that cannot be read (a timeout). */
  start(): StoppableCall;
  /** Reads, inflates and decodes the request's message; called once the caller is authenticated. */
  read(): Promise<unknown>;
  /** The handler, wrapped by handlers(). */
  handler: Handler;
}

export interface PipelineOptions {
  observer: CallObserver;
  calls: InFlightCalls;
  /** Set when authentication is on. */
  authenticator?: Authenticator;
  /** Set when it is off: the Host a request must name (host-rule.ts). */
  hosts?: HostRule;
}

export class CallPipeline {
  constructor(private readonly o: PipelineOptions) {}

  /** What watches every call: connect-adapter.ts tells it of the calls connect refuses before its interceptors. */
  get observer(): CallObserver {
    return this.o.observer;
  }

  /**
   * Steps 1 to 3 for connect, outermost first: every error leaves with a message gRPC can send; the call
   * is watched and tracked (the in-flight registry turns a shutdown's interruption, a deadline or a
   * cancel into the call's status, as the observers see it); a stream's undecodable message is the
   * caller's fault; the caller is authenticated.
   */
  interceptors(): Interceptor[] {
    const auth = this.o.authenticator;
    // Traced (when tracing is on) inside the tracking, so that the span ends with the status the call ends with.
    const traced = tracer() ? [tracingInterceptor] : [];
    return [sendableErrors, this.o.calls.interceptor(this.o.observer), ...traced, callerFaults, ...(auth ? [authenticating(auth)] : this.o.hosts ? [hostChecking(this.o.hosts)] : [])];
  }

  /** Steps 1 to 3 for the unary fast path, then the handler; the answer, or the status the client gets. */
  async serveUnary(a: UnaryArrival): Promise<{ answer?: unknown; error?: ConnectError }> {
    // Watched from its arrival: a call refused before its handler runs (no credentials, a message that
    // cannot be read, too large, too slow to arrive) is logged and counted as any other.
    let c: StoppableCall | undefined;
    const watch = this.o.observer({ method: a.method, requestId: a.requestId, values: () => c?.values });
    // Traced (when tracing is on) from its arrival too; its work runs with the call's span active.
    const span = CallSpan.start(a.method, a.header);
    let answer: unknown;
    let error: ConnectError | undefined;
    try {
      c = a.start();
      c.values.set(PEER, { address: a.socket.remoteAddress ?? "", port: a.socket.remotePort ?? 0 });
      c.values.set(REQUEST_ID, a.requestId);
      // Credentials first: an unauthenticated caller's message is not even read.
      if (this.o.hosts) checkHost(this.o.hosts, a.method.parent.typeName, hostOf(a.header));
      const caller = this.o.authenticator && authenticate(this.o.authenticator, a.method.parent.typeName, a.authorization, a.socket);
      const principal = caller instanceof Promise ? await Promise.race([caller, c.stop]) : caller;
      const message = await Promise.race([a.read(), c.stop]);
      if (principal) c.values.set(CALLER, principal);
      const call = c;
      const untrack = this.o.calls.trackUnary((reason) => call.abort(reason));
      span?.request(message);
      const running = Promise.resolve(span ? span.run(() => a.handler(message as never, call)) : a.handler(message as never, c));
      // The call counts as in flight until its handler is done, also after its answer has gone out (a
      // waiter told UNAVAILABLE at shutdown still has to leave the line).
      running.then(untrack, untrack);
      answer = await Promise.race([running, c.stop]);
    } catch (err) {
      error = c?.aborted ?? toConnectError(err);
    }
    watch?.end(error);
    span?.end(error);
    return { answer, error };
  }
}
