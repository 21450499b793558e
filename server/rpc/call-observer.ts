// What watches calls from outside the handlers (the request log, the metrics): told when a call starts,
// of each message a stream sends, and how the call ends. The pipeline's first step (pipeline.ts), on
// both ways calls come in.
import type { DescMethod } from "@bufbuild/protobuf";
import { Code, type ConnectError, type ContextValues } from "@connectrpc/connect";

export interface CallStart {
  readonly method: DescMethod;
  readonly requestId: string;
  /** The call's values once it has them (its peer, its caller once authenticated, the policy's decisions): read at its end. */
  readonly values?: () => ContextValues | undefined;
}

export interface CallWatch {
  /** A message the server sends on a stream. */
  message?(message: unknown): void;
  /** Called once: error is undefined when the call succeeded. */
  end(error: ConnectError | undefined): void;
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
      end: (error) => {
        for (const w of watches) w.end(error);
      },
    };
  };
}

/** The gRPC code of a call's end, named as gRPC's own libraries name it: "OK", "NotFound", "Unavailable", ... */
export function codeName(error: ConnectError | undefined): string {
  return error ? Code[error.code] : "OK";
}
