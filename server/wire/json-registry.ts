// The message types an answer may carry inside a google.protobuf.Any: the details of a google.rpc.Status
// (an ErrorInfo, and RESOURCE_HELD's holder token) in a per-operation error of LeaseBatch, Batch,
// AcquireAll or KeepAlive. The JSON encoding names an Any's type and writes its fields, so it must know
// the type: without it, encoding such an answer throws, and a JSON caller would lose its connection
// instead of reading the refusals. Both the unary fast path and connect's router encode with it.
import { createRegistry } from "@bufbuild/protobuf";
import { file_fencekeeper_v1_token } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { file_google_rpc_error_details } from "../../gen/ts/google/rpc/error_details_pb.js";

export const JSON_REGISTRY = createRegistry(file_google_rpc_error_details, file_fencekeeper_v1_token);
