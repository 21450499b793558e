// Connect clients of both services over the gRPC protocol (HTTP/2), as a real user would make them.
import { ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";

export interface Clients {
  lease: Client<typeof LeaseService>;
  store: Client<typeof FencedStoreService>;
}

export function clientsFor(url: string): Clients {
  const transport = createGrpcTransport({ baseUrl: url });
  return { lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) };
}

/**
 * A token as a caller that is not its principal reads it in Describe, ListResources, Observe and
 * RESOURCE_HELD (docs/verifying-tokens.md): without its key id and signature. Without authentication
 * nobody is known to be the principal, so that is how every reader sees it.
 */
export function shownToOthers<T extends { keyId?: string; signature?: Uint8Array }>(token: T): Omit<T, "keyId" | "signature"> {
  const { keyId: _keyId, signature: _signature, ...identity } = token;
  return identity;
}

/**
 * Runs a preempting call, and again after the time its refusal names while the resource was preempted
 * less than --preemption-interval ago (PREEMPTION_RATE_EXCEEDED, docs/preemption.md): for a test that
 * takes a resource back from a preemptor, as a caller honouring retry_after_ms would.
 */
export async function preemptPaced<T>(call: () => Promise<T>, tries = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await call();
    } catch (err) {
      const info = ConnectError.from(err).findDetails(ErrorInfoSchema)[0];
      if (info?.reason !== "PREEMPTION_RATE_EXCEEDED" || i >= tries) throw err;
      await new Promise((resolve) => setTimeout(resolve, Number(info.metadata.retry_after_ms ?? 100)));
    }
  }
}
