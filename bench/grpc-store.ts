// fencekeeper's Put through @grpc/grpc-js, the gRPC library etcd3 uses: with both sides of the Put
// benchmark on the same client stack, the ratio measures the service, not two client libraries.
// A generic grpc.Client; @bufbuild/protobuf encodes the generated messages.
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  FencedStoreService,
  GetFenceRequestSchema,
  GetFenceResponseSchema,
  PutRequestSchema,
  PutResponseSchema,
  type GetFenceResponse,
  type PutResponse,
} from "../gen/ts/fencekeeper/v1/store_pb.js";

const PUT = `/${FencedStoreService.typeName}/${FencedStoreService.method.put.name}`;
const GET_FENCE = `/${FencedStoreService.typeName}/${FencedStoreService.method.getFence.name}`;
const serialize = (req: MessageInitShape<typeof PutRequestSchema>) => Buffer.from(toBinary(PutRequestSchema, create(PutRequestSchema, req)));
const deserialize = (bytes: Buffer) => fromBinary(PutResponseSchema, bytes);

export class GrpcStore {
  readonly #client: grpc.Client;
  readonly #timeoutMs: number;

  /** url: the server's http://host:port. */
  constructor(url: string, timeoutMs = 30_000) {
    this.#client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure());
    this.#timeoutMs = timeoutMs;
  }

  put(req: MessageInitShape<typeof PutRequestSchema>): Promise<PutResponse> {
    return new Promise((resolve, reject) =>
      this.#client.makeUnaryRequest(PUT, serialize, deserialize, req, new grpc.Metadata(), { deadline: Date.now() + this.#timeoutMs }, (err, res) =>
        err ? reject(err) : resolve(res!),
      ),
    );
  }

  getFence(resource: string): Promise<GetFenceResponse> {
    return new Promise((resolve, reject) =>
      this.#client.makeUnaryRequest(
        GET_FENCE,
        (req: MessageInitShape<typeof GetFenceRequestSchema>) => Buffer.from(toBinary(GetFenceRequestSchema, create(GetFenceRequestSchema, req))),
        (bytes: Buffer) => fromBinary(GetFenceResponseSchema, bytes),
        { resource },
        new grpc.Metadata(),
        { deadline: Date.now() + this.#timeoutMs },
        (err, res) => (err ? reject(err) : resolve(res!)),
      ),
    );
  }

  close(): void {
    this.#client.close();
  }
}
