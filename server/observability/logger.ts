// The server's logger: JSON lines on stdout (pino), each written during a call carrying its request id.
import pino, { type Logger } from "pino";
import { currentRequest } from "./request-context.js";

export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: "fencekeeper" },
    mixin() {
      const request = currentRequest();
      return request ? { requestId: request.requestId } : {};
    },
  });
}
