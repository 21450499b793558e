// Watching a call from an interceptor: each message a stream sends, and how and when the call ends.
// Unary calls end when the handler returns or throws; streams when their last message is taken, when
// they fail, or when they are closed early (the client went away, the server ended them).
import { Code, ConnectError, type StreamRequest, type StreamResponse, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";

export type AnyRequest = UnaryRequest | StreamRequest;
export type AnyResponse = UnaryResponse | StreamResponse;
export type Next = (req: AnyRequest) => Promise<AnyResponse>;

export interface CallTap {
  /** A message the server sends on a stream. */
  message?(message: unknown): void;
  /** Called once: error is undefined when the call succeeded; response is a unary call's answer. */
  end(error: ConnectError | undefined, response?: unknown): void;
}

/** The error as the client sees it: what is not a ConnectError leaves as INTERNAL. */
export function asConnectError(err: unknown): ConnectError {
  return err instanceof ConnectError ? err : ConnectError.from(err, Code.Internal);
}

/** A failure while the call's signal is aborted is the client going away (or a deadline), not a server fault. */
function failure(err: unknown, signal: AbortSignal): ConnectError {
  if (!(err instanceof ConnectError) && signal.aborted) return ConnectError.from(signal.reason, Code.Canceled);
  return asConnectError(err);
}

export async function tapCall(next: Next, req: AnyRequest, tap: CallTap): Promise<AnyResponse> {
  let res: AnyResponse;
  try {
    res = await next(req);
  } catch (err) {
    tap.end(failure(err, req.signal));
    throw err;
  }
  if (!res.stream) {
    tap.end(undefined, res.message);
    return res;
  }
  return { ...res, message: tapStream(res.message, req.signal, tap) };
}

function tapStream<T>(source: AsyncIterable<T>, signal: AbortSignal, tap: CallTap): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const it = source[Symbol.asyncIterator]();
      let ended = false;
      const end = (error?: ConnectError) => {
        if (ended) return;
        ended = true;
        // A handler that stops because its call was aborted ends quietly; the call still failed.
        tap.end(error ?? (signal.aborted ? ConnectError.from(signal.reason, Code.Canceled) : undefined));
      };
      return {
        async next() {
          try {
            const r = await it.next();
            if (r.done) end();
            else tap.message?.(r.value);
            return r;
          } catch (err) {
            end(failure(err, signal));
            throw err;
          }
        },
        async return(value?: unknown) {
          end(new ConnectError("the stream was closed before its end", Code.Canceled));
          return (await it.return?.(value)) ?? { done: true, value: value as T };
        },
        async throw(err?: unknown) {
          end(failure(err, signal));
          if (it.throw) return it.throw(err);
          throw err;
        },
      };
    },
  };
}

/** The gRPC code of a call's end, named as gRPC's own libraries name it: "OK", "NotFound", "Unavailable", ... */
export function codeName(error: ConnectError | undefined): string {
  return error ? Code[error.code] : "OK";
}
