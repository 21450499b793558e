// Authentication on connect's path (streams, and what the unary fast path leaves to connect): the
// adapter puts each request's connection and Authorization header in its context values, and this
// interceptor turns them into the caller before the handler runs. Health and reflection answer anyone:
// probes and tools reach them without credentials, and they reveal no lease.
import type { Interceptor } from "@connectrpc/connect";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { createContextValues, type ContextValues } from "@connectrpc/connect";
import { toConnectError } from "../api/errors.js";
import { CALLER, CREDENTIALS, PEER } from "./access.js";
import type { Authenticator } from "./authenticator.js";

const OPEN_SERVICES = new Set(["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]);

/** Whether the service (by its full name) answers callers without credentials. */
export const answersAnyone = (service: string): boolean => OPEN_SERVICES.has(service);

/** For connectNodeAdapter's contextValues: the connection and its credentials, for authentication and caps. */
export function credentialsOf(req: IncomingMessage | Http2ServerRequest): ContextValues {
  const values = createContextValues();
  const authorization = req.headers.authorization;
  values.set(CREDENTIALS, { socket: req.socket, authorization: Array.isArray(authorization) ? authorization[0] : authorization });
  values.set(PEER, { address: req.socket.remoteAddress ?? "", port: req.socket.remotePort ?? 0 });
  return values;
}

export function authenticating(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    if (answersAnyone(req.service.typeName)) return next(req);
    const credentials = req.contextValues.get(CREDENTIALS);
    if (!credentials) throw new Error("a request without its credentials in its context values: connectNodeAdapter needs contextValues: credentialsOf");
    try {
      req.contextValues.set(CALLER, await authenticator.authenticate(credentials.authorization, credentials.socket));
    } catch (err) {
      throw toConnectError(err);
    }
    return next(req);
  };
}
