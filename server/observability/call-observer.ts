// What watches calls from outside the handlers (the request log, the metrics): told when a call starts,
// of each message a stream sends, and how the call ends. Both ways calls come in feed it: connect's
// handlers through one interceptor (interceptorFor), and the unary fast path (server/rpc) directly.
import type { DescMethod } from "@bufbuild/protobuf";
import type { ConnectError, Interceptor } from "@connectrpc/connect";
import { tapCall } from "./call-tap.js";
import { REQUEST_ID_HEADER, requestIdFrom } from "./request-context.js";

export interface CallStart {
  readonly method: DescMethod;
  readonly requestId: string;
  /** The request message of a unary or server-streaming call. */
  readonly request?: unknown;
}

export interface CallWatch {
  /** A message the server sends on a stream. */
  message?(message: unknown): void;
  /** Called once: error is undefined when the call succeeded; response is a unary call's answer. */
  end(error: ConnectError | undefined, response?: unknown): void;
}

/** Told of every call; returns what watches it, or undefined to let it pass. */
export type CallObserver = (call: CallStart) => CallWatch | undefined;

/** One observer for many. */
export function allOf(observers: CallObserver[]): CallObserver {
  return (call) => {
    const watches: CallWatch[] = [];
    for (const o of observers) {
      const w = o(call);
      if (w) watches.push(w);
    }
    if (watches.length === 0) return undefined;
    return {
      message: (m) => {
        for (const w of watches) w.message?.(m);
      },
      end: (error, response) => {
        for (const w of watches) w.end(error, response);
      },
    };
  };
}

/** The observer as a connect interceptor, for the calls connect serves; echoes the request id. */
export function interceptorFor(observer: CallObserver): Interceptor {
  return (next) => async (req) => {
    const requestId = requestIdFrom(req.header.get(REQUEST_ID_HEADER));
    const watch = observer({ method: req.method, requestId, request: req.stream ? undefined : req.message });
    try {
      const res = watch ? await tapCall(next, req, watch) : await next(req);
      res.header.set(REQUEST_ID_HEADER, requestId);
      return res;
    } catch (err) {
      (err as ConnectError).metadata?.set(REQUEST_ID_HEADER, requestId);
      throw err;
    }
  };
}
