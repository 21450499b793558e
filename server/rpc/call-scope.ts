// The call a piece of domain code runs for, when something needs to know it: the domain's events say
// what happened, not who asked (server/events/events.ts), and the audit trail needs both. A handler runs
// inside its call's scope (pipeline.ts handlers()), and a listener of domain events, told synchronously
// on the emitter's turn, finds the call's values here. Off unless a listener needs it (--audit-log):
// AsyncLocalStorage costs a little on every await.
import { AsyncLocalStorage } from "node:async_hooks";
import type { ContextValues } from "@connectrpc/connect";

const scope = new AsyncLocalStorage<ContextValues>();
let on = false;

/** From now on, handlers run in their call's scope. */
export function keepCallScope(): void {
  on = true;
}

/** Runs fn in the scope of the call whose values these are (when scopes are kept). */
export function inCallScope<T>(values: ContextValues, fn: () => T): T {
  return on ? scope.run(values, fn) : fn();
}

/** The values of the call the running code serves; undefined outside a unary handler, or when scopes are not kept. */
export function currentCall(): ContextValues | undefined {
  return on ? scope.getStore() : undefined;
}
