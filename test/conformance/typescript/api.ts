// What the TypeScript scenario needs from a gRPC library: the calls of both services with the generated
// message types, and the status and ErrorInfo of a failed call. connect.ts and grpc-js.ts provide it.
import type { DescMessage, MessageInitShape } from "@bufbuild/protobuf";
import type {
  AcquireRequestSchema,
  AcquireResponse,
  DescribeRequestSchema,
  DescribeResponse,
  KeepAliveRequestSchema,
  KeepAliveResponse,
  ObserveRequestSchema,
  ObserveResponse,
  ReleaseRequestSchema,
  ReleaseResponse,
  RenewRequestSchema,
  RenewResponse,
} from "../../../gen/ts/fencekeeper/v1/lease_pb.js";
import type { GetRequestSchema, GetResponse, PutRequestSchema, PutResponse } from "../../../gen/ts/fencekeeper/v1/store_pb.js";

type Init<Desc extends DescMessage> = MessageInitShape<Desc>;

/** One connection to the server. */
export interface Api {
  acquire(req: Init<typeof AcquireRequestSchema>): Promise<AcquireResponse>;
  renew(req: Init<typeof RenewRequestSchema>): Promise<RenewResponse>;
  release(req: Init<typeof ReleaseRequestSchema>): Promise<ReleaseResponse>;
  describe(req: Init<typeof DescribeRequestSchema>): Promise<DescribeResponse>;
  /** A KeepAlive stream: sends what requests yields, then half-closes; yields every answer. */
  keepAlive(requests: AsyncIterable<Init<typeof KeepAliveRequestSchema>>): AsyncIterable<KeepAliveResponse>;
  /** An Observe stream, cancelled when signal aborts. */
  observe(req: Init<typeof ObserveRequestSchema>, signal: AbortSignal): AsyncIterable<ObserveResponse>;
  put(req: Init<typeof PutRequestSchema>): Promise<PutResponse>;
  get(req: Init<typeof GetRequestSchema>): Promise<GetResponse>;
  close(): void;
}

/** What a failed call tells: its canonical status code name and the ErrorInfo of its details. */
export interface Failure {
  code: string;
  reason: string;
  domain: string;
}

export interface Library {
  readonly name: string;
  /** Connects to a server given as http://host:port (gRPC over cleartext HTTP/2). */
  connect(server: string): Api;
  /** The failure of a call, or undefined when error is not a failed call. */
  failureOf(error: unknown): Failure | undefined;
}
