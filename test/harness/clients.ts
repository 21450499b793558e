// Connect clients of both services over the gRPC protocol (HTTP/2), as a real user would make them.
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";

export interface Clients {
  lease: Client<typeof LeaseService>;
  store: Client<typeof FencedStoreService>;
}

export function clientsFor(url: string): Clients {
  const transport = createGrpcTransport({ baseUrl: url });
  return { lease: createClient(LeaseService, transport), store: createClient(FencedStoreService, transport) };
}
