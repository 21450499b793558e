// The request a piece of code runs for, carried through its async calls, so that every log line written
// while serving a call names the call's request id without the handlers passing it along.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";

export interface RequestContext {
  readonly requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The header a request id travels in: set by meshes and proxies (Envoy, Istio), and echoed back. */
export const REQUEST_ID_HEADER = "x-request-id";

const USABLE_ID = /^[\w.:@/+=-]{1,128}$/;

/** The caller's request id when it sent a usable one, else a new one. */
export function requestIdFrom(headers: Headers): string {
  const given = headers.get(REQUEST_ID_HEADER);
  return given && USABLE_ID.test(given) ? given : randomUUID();
}

export function runInRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function currentRequest(): RequestContext | undefined {
  return storage.getStore();
}
