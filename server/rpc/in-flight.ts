// The calls in flight, each wrapped once on its way in, for two purposes: the shutdown, and the observers.
//
// The shutdown lets unary calls finish, ends streams at once, and abandons what is still running when the
// grace period is over. Streams (KeepAlive, Observe, health Watch) last as long as their clients want;
// waiting for them would hold every shutdown for the whole grace period. They end with UNAVAILABLE, which
// every gRPC client treats as "try again", and a new connection reaches another replica. Ending a stream
// releases nothing: leases live on in etcd until their TTL, and the client renews them through the
// replica it reaches.
//
// A stream also ends, with the call's own status, when its deadline passes (DEADLINE_EXCEEDED) or its
// client cancels it (CANCELLED), whatever its handler is waiting for: a handler reading the client's
// next message, or waiting for a change to report, does not have to watch for either.
//
// The observers (the request log, the metrics: call-observer.ts) are told when a
// call starts, of each message a stream sends, and how the call ends, with the status the client gets:
// after a shutdown's interruption, a deadline or a cancel has become the call's status. Unary calls end
// when the handler returns or throws; streams when their last message is taken, when they fail, or when
// they are closed early (the client went away, the server ended them).
import { Code, ConnectError, createContextKey, type Interceptor, type StreamRequest, type StreamResponse, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import type { CallObserver, CallWatch } from "./call-observer.js";
import { REQUEST_ID, REQUEST_ID_HEADER, requestIdFrom } from "./request-context.js";

type AnyRequest = UnaryRequest | StreamRequest;
type AnyResponse = UnaryResponse | StreamResponse;
type Next = (req: AnyRequest) => Promise<AnyResponse>;

interface Call {
  readonly controller: AbortController;
  /** Set once the call was ended from outside its handler (the shutdown, its deadline, its client): its status. */
  stopped?: ConnectError;
  /** Streams only: ends the stream now with the status given. */
  interrupt?: (status: ConnectError) => void;
}

/** Set on a call's context values once it reaches the interceptors (server/rpc/connect-adapter.ts). */
export const OBSERVED = createContextKey(false, { description: "the call was handed to the observers" });

/** What a call ended by the shutdown answers. */
export function shuttingDown(): ConnectError {
  return new ConnectError("fencekeeper is shutting down; call again, another replica will answer", Code.Unavailable);
}

/** A unary call as the registry knows it: what to do when the shutdown abandons it. */
interface UnaryCall {
  abandon(reason: ConnectError): void;
}

export class InFlightCalls {
  private readonly unary = new Set<UnaryCall>();
  private readonly streams = new Set<Call>();
  private idle: (() => void)[] = [];
  private closing = false;

  /**
   * The interceptor every call connect serves passes through: the observer sees the call, its handler
   * gets a signal this registry can abort, and the request id is echoed back. Outside the interceptors
   * that may refuse a call (caller faults, authentication), so that a refused call is seen too.
   */
  interceptor(observer: CallObserver): Interceptor {
    return (next) => async (req) => {
      const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
      req.contextValues.set(OBSERVED, true);
      req.contextValues.set(REQUEST_ID, requestId);
      const watch = observer({ method: req.method, requestId, values: () => req.contextValues });
      let res: AnyResponse;
      try {
        res = await this.track(next, req, watch);
      } catch (err) {
        watch?.end(failure(err, req.signal));
        (err as ConnectError).metadata?.set(REQUEST_ID_HEADER, requestId);
        throw err;
      }
      // A stream's end is told by the stream itself (wrap).
      if (!res.stream) watch?.end(undefined);
      res.header.set(REQUEST_ID_HEADER, requestId);
      return res;
    };
  }

  /** Serves the call with a signal of its own, tracked until it ends; its error is the call's status. */
  private async track(next: Next, req: AnyRequest, watch: CallWatch | undefined): Promise<AnyResponse> {
    const call: Call = { controller: new AbortController() };
    const forward = () => {
      call.controller.abort(req.signal.reason);
      call.interrupt?.(callEnded(req.signal.reason));
    };
    if (req.signal.aborted) forward();
    else req.signal.addEventListener("abort", forward, { once: true });
    const unaryCall: UnaryCall = {
      abandon: (reason) => {
        call.stopped = reason;
        call.controller.abort(reason);
      },
    };
    const untrack = (set: Set<Call> | Set<UnaryCall>) => {
      set.delete(call as never);
      set.delete(unaryCall as never);
      req.signal.removeEventListener("abort", forward);
      if (this.unary.size === 0) for (const resolve of this.idle.splice(0)) resolve();
    };
    const inner = { ...req, signal: call.controller.signal } as typeof req;

    if (!req.stream) {
      this.unary.add(unaryCall);
      try {
        return await next(inner);
      } catch (err) {
        throw call.stopped ?? err;
      } finally {
        untrack(this.unary);
      }
    }

    this.streams.add(call);
    try {
      const res = await next(inner);
      if (!res.stream) {
        untrack(this.streams);
        return res;
      }
      const message = wrap(res.message, call, req.signal, watch, () => untrack(this.streams));
      // A stream that got in while the server was closing ends at once, like the ones before it; so
      // does one whose call ended while its handler was starting.
      if (this.closing) call.interrupt?.(shuttingDown());
      else if (req.signal.aborted) call.interrupt?.(callEnded(req.signal.reason));
      return { ...res, message };
    } catch (err) {
      untrack(this.streams);
      throw call.stopped ?? err;
    }
  }

  /** Tracks a unary call served outside connect (the fast path); returns the function that ends tracking. */
  trackUnary(abandon: (reason: ConnectError) => void): () => void {
    const call: UnaryCall = { abandon };
    this.unary.add(call);
    return () => {
      this.unary.delete(call);
      if (this.unary.size === 0) for (const resolve of this.idle.splice(0)) resolve();
    };
  }

  get unaryCount(): number {
    return this.unary.size;
  }

  /** Ends every open stream with UNAVAILABLE, and every stream that opens from now on. */
  endStreams(): void {
    this.closing = true;
    for (const call of [...this.streams]) call.interrupt?.(shuttingDown());
  }

  /** Resolves true once no unary call is in flight, or false when ms have passed first. */
  unaryDone(ms: number): Promise<boolean> {
    if (this.unary.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Aborts the unary calls still running: each gives up (a waiting Acquire leaves the line) and answers UNAVAILABLE. */
  abandonUnary(): void {
    for (const call of this.unary) call.abandon(shuttingDown());
  }
}

/** The status of a call whose signal was aborted by connect: its deadline, or its client going away. */
function callEnded(reason: unknown): ConnectError {
  return reason instanceof ConnectError ? reason : new ConnectError("the client cancelled the call", Code.Canceled);
}

/** A failure while the call's signal is aborted is the client going away (or a deadline), not a server fault. */
function failure(err: unknown, signal: AbortSignal): ConnectError {
  if (!(err instanceof ConnectError) && signal.aborted) return ConnectError.from(signal.reason, Code.Canceled);
  return err instanceof ConnectError ? err : ConnectError.from(err, Code.Internal);
}

/**
 * The stream as the handler produces it, each message shown to the watch, until interrupt(status): then
 * the handler's signal is aborted (so it lets go of its etcd watches), and the call fails with that status
 * at once, even while the handler waits for something to send. onEnd ends its tracking; the watch is told
 * how the stream ended, once.
 */
function wrap<T>(source: AsyncIterable<T>, call: Call, signal: AbortSignal, watch: CallWatch | undefined, onEnd: () => void): AsyncIterable<T> {
  let it: AsyncIterator<T> | undefined;
  // The reject of the next() in progress, if any. Not a promise raced against each next(): a promise
  // that stays pending for the whole stream would keep every message's result reachable from it.
  let rejectWaiting: ((err: ConnectError) => void) | undefined;
  let tracked = true;
  const untrack = () => {
    if (!tracked) return;
    tracked = false;
    call.interrupt = undefined;
    onEnd();
  };
  let told = false;
  const tell = (error: ConnectError | undefined) => {
    if (told) return;
    told = true;
    watch?.end(error);
  };
  call.interrupt = (status) => {
    call.stopped = status;
    call.controller.abort(status);
    // The call ends with this status now, whether or not connect reads the stream again (it does not
    // when its client has gone): the watch is told, and the registry lets go of it, at once.
    tell(status);
    untrack();
    rejectWaiting?.(status);
    // The handler finishes in the background; nobody reads what it still sends.
    it?.return?.().catch(() => undefined);
  };
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const source$ = (it = source[Symbol.asyncIterator]());
      return {
        async next() {
          try {
            if (call.stopped) throw call.stopped;
            const r = await new Promise<IteratorResult<T>>((resolve, reject) => {
              rejectWaiting = reject;
              source$.next().then(resolve, reject);
            });
            rejectWaiting = undefined;
            if (r.done) {
              // A client's reset (RST_STREAM) ends its messages as a half-close does, so a handler that
              // has answered them all ends as if the call were complete. The two are told apart once
              // the HTTP/2 stream has closed, which aborts the call's signal: a turn of the event loop
              // later. A cancelled call is no success.
              await new Promise((resolve) => setImmediate(resolve));
              untrack();
              if (call.stopped) throw call.stopped;
              // A handler that stops because its call was aborted ends quietly; the call still failed.
              tell(signal.aborted ? ConnectError.from(signal.reason, Code.Canceled) : undefined);
            } else {
              watch?.message?.(r.value);
            }
            return r;
          } catch (err) {
            rejectWaiting = undefined;
            untrack();
            if (call.stopped) source$.return?.().catch(() => undefined);
            const status = call.stopped ?? err;
            tell(failure(status, signal));
            throw status;
          }
        },
        async return(value?: unknown) {
          tell(new ConnectError("the stream was closed before its end", Code.Canceled));
          untrack();
          return (await source$.return?.(value)) ?? { done: true, value: value as T };
        },
        async throw(err?: unknown) {
          tell(failure(err, signal));
          untrack();
          if (source$.throw) return source$.throw(err);
          throw err;
        },
      };
    },
  };
}
