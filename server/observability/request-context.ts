// The request id of a call: the caller's, when it sent a usable one (meshes and proxies such as Envoy
// and Istio set it), else a new one. It is echoed back, and every log line about the call carries it.
import { randomUUID } from "node:crypto";

/** The header a request id travels in. */
export const REQUEST_ID_HEADER = "x-request-id";

const USABLE_ID = /^[\w.:@/+=-]{1,128}$/;

/** The caller's request id when it sent a usable one, else a new one. */
export function requestIdFrom(given: string | null | undefined): string {
  return given && USABLE_ID.test(given) ? given : randomUUID();
}

/** The request context of code running for a call; none is kept any more (the log line of each call carries its id). */
export function currentRequest(): { requestId: string } | undefined {
  return undefined;
}
