// gRPC server reflection, v1 and v1alpha, over the services registered on the router. Both versions
// are one protocol under two package names with the same messages, field for field; v1alpha requests
// are answered by the v1 code through a binary round trip, which is exact for identical messages. The
// files are served with the proto's comments (./documentation.ts), so that tools show the contract's
// documentation.
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { file_fencekeeper_v1_errors } from "../../gen/ts/fencekeeper/v1/errors_pb.js";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
  type ServerReflectionRequest,
} from "../../gen/ts-grpc/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/ts-grpc/grpc/reflection/v1alpha/reflection_pb.js";
import { DescriptorIndex } from "./descriptor-index.js";
import { DOCUMENTED_DESCRIPTORS, findDocumentation, loadDocumentation, type Documentation } from "./documentation.js";

type Answer = MessageInitShape<typeof ServerReflectionResponseSchema>;

/** Registers both versions; call it after every other service, so that reflection lists them all. */
export function registerReflection(router: ConnectRouter, log: Logger): void {
  const documentationPath = findDocumentation();
  if (!documentationPath) log.warn(`reflection describes the contract without its comments: ${DOCUMENTED_DESCRIPTORS} is missing (npm run generate writes it)`);
  let index: DescriptorIndex | undefined;
  // Built at the first question, not to delay start-up: by then the router holds every service, reflection
  // included. ErrorInfo, which failed calls carry as a detail, is described too, so that tools can decode
  // it, and fencekeeper's ErrorReason, whose comments say what each ErrorInfo.reason means.
  const lookup = () => {
    if (index) return index;
    const documentation = documentationPath ? readDocumentation(documentationPath, log) : undefined;
    index = new DescriptorIndex(router.handlers.map((h) => h.service), [ErrorInfoSchema.file, file_fencekeeper_v1_errors], documentation);
    if (documentation && index.undocumented.length > 0) {
      log.info({ files: index.undocumented }, `reflection describes these files without comments: ${DOCUMENTED_DESCRIPTORS} lacks them or is stale`);
    }
    return index;
  };
  router.service(ServerReflection, reflectionV1(lookup));
  router.service(v1alpha.ServerReflection, reflectionV1alpha(lookup));
}

/** The documentation, or none (said in the log) when the file cannot be read: reflection works without. */
function readDocumentation(path: string, log: Logger): Documentation | undefined {
  try {
    return loadDocumentation(path);
  } catch (err) {
    log.warn({ err: (err as Error).message, path }, "reflection describes the contract without its comments: the documented descriptors cannot be read");
    return undefined;
  }
}

function reflectionV1(index: () => DescriptorIndex): ServiceImpl<typeof ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(index(), req);
    },
  };
}

function reflectionV1alpha(index: () => DescriptorIndex): ServiceImpl<typeof v1alpha.ServerReflection> {
  return {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        const asV1 = fromBinary(ServerReflectionRequestSchema, toBinary(v1alpha.ServerReflectionRequestSchema, req));
        const res = create(ServerReflectionResponseSchema, answer(index(), asV1));
        yield fromBinary(v1alpha.ServerReflectionResponseSchema, toBinary(ServerReflectionResponseSchema, res));
      }
    },
  };
}

function answer(index: DescriptorIndex, req: ServerReflectionRequest): Answer {
  const base = { validHost: req.host, originalRequest: req };
  const files = (found: Uint8Array[] | undefined, what: string): Answer =>
    found
      ? { ...base, messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: found } } }
      : error(Code.NotFound, `${what} is not known to this server`);
  const error = (code: Code, message: string): Answer => ({
    ...base,
    messageResponse: { case: "errorResponse", value: { errorCode: code, errorMessage: message } },
  });

  const q = req.messageRequest;
  switch (q.case) {
    case "fileByFilename":
      return files(index.fileByName(q.value), `file "${q.value}"`);
    case "fileContainingSymbol":
      return files(index.fileContainingSymbol(q.value), `symbol "${q.value}"`);
    case "fileContainingExtension":
      return files(index.fileContainingExtension(q.value.containingType, q.value.extensionNumber), `extension ${q.value.extensionNumber} of "${q.value.containingType}"`);
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbers(q.value);
      if (!numbers) return error(Code.NotFound, `type "${q.value}" is not known to this server`);
      return { ...base, messageResponse: { case: "allExtensionNumbersResponse", value: { baseTypeName: q.value, extensionNumber: numbers } } };
    }
    case "listServices":
      return { ...base, messageResponse: { case: "listServicesResponse", value: { service: index.serviceNames.map((name) => ({ name })) } } };
    default:
      return error(Code.InvalidArgument, "the request asks nothing: set one of the message_request fields");
  }
}
