// Authentication, the pipeline's first step after a call is watched: the caller, from the connection and
// its Authorization header, before the handler runs (on the unary fast path, before the message is even
// read). Health and reflection answer anyone: probes and tools reach them without credentials, and they
// reveal no lease.
import type { Interceptor } from "@connectrpc/connect";
import type { Socket } from "node:net";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { createContextValues, type ContextValues } from "@connectrpc/connect";
import { CALLER, CREDENTIALS, PEER } from "../auth/access.js";
import type { Authenticator } from "../auth/authenticator.js";
import type { Principal } from "../auth/principal.js";
import { toConnectError } from "./errors.js";

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

/** For connect's contextValues: the connection and its credentials, for authentication and caps. */
export function credentialsOf(req: IncomingMessage | Http2ServerRequest): ContextValues {
  const values = createContextValues();
  const authorization = req.headers.authorization;
  values.set(CREDENTIALS, { socket: req.socket, authorization: Array.isArray(authorization) ? authorization[0] : authorization });
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
