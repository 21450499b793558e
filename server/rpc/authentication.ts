// Authentication, the pipeline's first step after a call is watched: the caller, from the connection and
// its Authorization header, before the handler runs (on the unary fast path, before the message is even
// read). Health and reflection answer anyone: probes and tools reach them without credentials, and they
// reveal no lease. Without authentication, the step checks what a request can still be asked for: that it
// names this server in its Host (host-rule.ts), so that a web page cannot drive the port through DNS
// rebinding.
import type { Interceptor } from "@connectrpc/connect";
import type { Socket } from "node:net";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { createContextValues, type ContextValues } from "@connectrpc/connect";
import { CALLER, CREDENTIALS, PEER } from "../auth/access.js";
import type { Authenticator } from "../auth/authenticator.js";
import type { Principal } from "../auth/principal.js";
import { DomainError } from "../errors/errors.js";
import { toConnectError } from "./status.js";
import { hostRefusal, type HostRule } from "./host-rule.js";

const OPEN_SERVICES = new Set(["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]);

/** Whether the service (by its full name) answers callers without credentials. */
export const answersAnyone = (service: string): boolean => OPEN_SERVICES.has(service);

/**
 * The caller of a call to service; undefined when the service answers anyone. A promise when the
 * authenticator has to wait (a key set to fetch); a refusal (UNAUTHENTICATED) is thrown or rejected.
 */
export function authenticate(authenticator: Authenticator, service: string, authorization: string | undefined, socket: Socket): Principal | Promise<Principal> | undefined {
  return answersAnyone(service) ? undefined : authenticator.authenticate(authorization, socket);
}

/** Without authentication: a call to a service that is not open to anyone must name this server in its Host; PERMISSION_DENIED otherwise. */
export function checkHost(rule: HostRule, service: string, host: string | undefined): void {
  if (answersAnyone(service) || rule.allows(host)) return;
  throw new DomainError("permission_denied", hostRefusal(host, rule), "PERMISSION_DENIED", { host: (host ?? "").slice(0, 256) });
}

/** The Host a request names: HTTP/2's :authority, else HTTP/1.1's Host header. */
export function hostOf(header: (name: string) => string | undefined): string | undefined {
  return header(":authority") ?? header("host");
}

/** For connect's contextValues: the connection and its credentials, for authentication and caps. */
export function credentialsOf(req: IncomingMessage | Http2ServerRequest): ContextValues {
  const values = createContextValues();
  const authorization = req.headers.authorization;
  const host = hostOf((name) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v[0] : v;
  });
  values.set(CREDENTIALS, { socket: req.socket, authorization: Array.isArray(authorization) ? authorization[0] : authorization, host });
  values.set(PEER, { address: req.socket.remoteAddress ?? "", port: req.socket.remotePort ?? 0 });
  return values;
}

/** The step on connect's path: the caller into the call's values. */
export function authenticating(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    const credentials = req.contextValues.get(CREDENTIALS);
    if (!credentials) throw new Error("a request without its credentials in its context values: connect's adapter needs contextValues: credentialsOf");
    try {
      const caller = await authenticate(authenticator, req.service.typeName, credentials.authorization, credentials.socket);
      if (caller) req.contextValues.set(CALLER, caller);
    } catch (err) {
      throw toConnectError(err);
    }
    return next(req);
  };
}

/** The step on connect's path without authentication: the Host rule. */
export function hostChecking(rule: HostRule): Interceptor {
  return (next) => async (req) => {
    try {
      checkHost(rule, req.service.typeName, req.contextValues.get(CREDENTIALS)?.host);
    } catch (err) {
      throw toConnectError(err);
    }
    return next(req);
  };
}
