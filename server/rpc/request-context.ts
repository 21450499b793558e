// The request id of a call: the caller's, when it sent a usable one (meshes and proxies such as Envoy
// and Istio set it), else a new one. It is echoed back, and every log line about the call carries it.
import { randomUUID } from "node:crypto";
import { createContextKey } from "@connectrpc/connect";
import { currentCall } from "./call-scope.js";

/** The header a request id travels in. */
export const REQUEST_ID_HEADER = "x-request-id";

const USABLE_ID = /^[\w.:@/+=-]{1,128}$/;

/** The caller's request id when it sent a usable one, else a new one. */
export function requestIdFrom(given: string | null | undefined): string {
  return given && USABLE_ID.test(given) ? given : randomUUID();
}

/** A call's request id, in its values: put there as the call arrives, whichever adapter brings it. */
export const REQUEST_ID = createContextKey<string>("", { description: "the call's request id" });

/**
 * The request id of the call the running code serves (a unary handler and what it calls, while call
 * scopes are kept: at debug level, for the ownership log, and with --audit-log); undefined elsewhere.
 */
export function currentRequest(): { requestId: string } | undefined {
  const requestId = currentCall()?.get(REQUEST_ID);
  return requestId ? { requestId } : undefined;
}
