// An error's message must be able to leave: gRPC sends it percent-encoded in grpc-message, and
// encodeURIComponent throws on a lone UTF-16 surrogate. Such messages happen: a message that quotes what
// the client sent (an invalid UTF-8 name kept visible as lone surrogates, a JSON.parse message that cuts
// a surrogate pair of the request in half). Without this, the answer cannot be written: the stream is
// reset, or the call is never answered at all. Every error leaves through sendable(): the fast path's
// writer calls it, and the interceptor below covers what connect serves.
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { LONE_SURROGATE } from "../validation/validate.js";

/** The error with each lone surrogate of its message replaced by U+FFFD; the error itself when it has none. */
export function sendable(err: ConnectError): ConnectError {
  const message = err.rawMessage.replace(LONE_SURROGATES, "\uFFFD");
  if (message === err.rawMessage) return err;
  const out = new ConnectError(message, err.code, err.metadata, undefined, err.cause);
  out.details.push(...err.details);
  return out;
}

/** Every lone surrogate of a string, as validation finds one. */
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, "g");

function sendableOf(err: unknown): unknown {
  return err instanceof ConnectError ? sendable(err) : err;
}

/** Outermost interceptor: every error of a call connect serves, unary or stream, leaves through sendable(). */
export const sendableErrors: Interceptor = (next) => async (req) => {
  let res;
  try {
    res = await next(req);
  } catch (err) {
    throw sendableOf(err);
  }
  if (!res.stream) return res;
  const source = res.message;
  return {
    ...res,
    message: (async function* () {
      try {
        yield* source;
      } catch (err) {
        throw sendableOf(err);
      }
    })(),
  };
};
