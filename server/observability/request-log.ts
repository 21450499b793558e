// One log line per call, with a request id that every other line written for the call carries too.
// Only names, codes and timings are logged: never request or response contents.
import { Code, type ConnectError, type Interceptor } from "@connectrpc/connect";
import type { Level, Logger } from "pino";
import { codeName, tapCall } from "./call-tap.js";
import { errorReason } from "./error-reason.js";
import { REQUEST_ID_HEADER, requestIdFrom, runInRequest } from "./request-context.js";

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

export function requestLog(log: Logger): Interceptor {
  return (next) => async (req) => {
    const context = { requestId: requestIdFrom(req.header) };
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const started = performance.now();
    let messages = 0;
    try {
      const res = await tapCall(next, req, {
        around: (step) => runInRequest(context, step),
        message: () => messages++,
        end: (error) =>
          runInRequest(context, () => {
            const line: Record<string, unknown> = { rpc, code: codeName(error), ms: Math.round((performance.now() - started) * 10) / 10 };
            if (req.stream) line.messages = messages;
            const reason = errorReason(error);
            if (reason) line.reason = reason;
            if (error && SERVER_FAILURES.has(error.code)) line.error = error.rawMessage;
            log[levelOf(error)](line, "call");
          }),
      });
      res.header.set(REQUEST_ID_HEADER, context.requestId);
      return res;
    } catch (err) {
      (err as ConnectError).metadata?.set(REQUEST_ID_HEADER, context.requestId);
      throw err;
    }
  };
}
