// One log line per call, with its request id. Only names, codes and timings are logged: never request
// or response contents. A line whose level is off is not built at all.
import { Code, type ConnectError } from "@connectrpc/connect";
import type { Level, Logger } from "pino";
import { codeName, type CallObserver } from "../rpc/call-observer.js";
import { errorReason } from "./error-reason.js";

/** Success is routine (debug); a caller's mistake is worth a note (info); the server's own failures are not. */
function levelOf(error: ConnectError | undefined): Level {
  if (!error || error.code === Code.Canceled) return "debug";
  switch (error.code) {
    case Code.Unavailable:
    case Code.ResourceExhausted:
      return "warn";
    case Code.Internal:
    case Code.Unknown:
    case Code.DataLoss:
      return "error";
    default:
      return "info";
  }
}

/** Server-side failures keep their message (it says what broke); a caller's error is summed up by code and reason. */
const SERVER_FAILURES = new Set([Code.Unavailable, Code.Internal, Code.Unknown, Code.DataLoss, Code.ResourceExhausted]);

export function requestLog(log: Logger): CallObserver {
  return ({ method, requestId }) => {
    const started = performance.now();
    let messages = 0;
    const stream = method.methodKind !== "unary";
    return {
      message: () => void messages++,
      end(error) {
        const level = levelOf(error);
        if (!log.isLevelEnabled(level)) return;
        const line: Record<string, unknown> = {
          requestId,
          rpc: `${method.parent.typeName}/${method.name}`,
          code: codeName(error),
          ms: Math.round((performance.now() - started) * 10) / 10,
        };
        if (stream) line.messages = messages;
        const reason = errorReason(error);
        if (reason) line.reason = reason;
        if (error && SERVER_FAILURES.has(error.code)) line.error = error.rawMessage;
        // An unexpected failure: what the caller was not told (INTERNAL hides it) is here.
        if (error?.code === Code.Internal && error.cause instanceof Error) line.err = error.cause;
        log[level](line, "call");
      },
    };
  };
}
