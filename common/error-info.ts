// google.rpc.ErrorInfo, the error detail every gRPC client library can decode, for TypeScript.
//
// The contract imports no googleapis file, so protoc-gen-es has nothing to generate it from; this module
// builds the same descriptor (fields as in google/rpc/error_details.proto) so that the server can attach
// ErrorInfo to a ConnectError and clients can read it back with ConnectError.findDetails(ErrorInfoSchema).
import { create, createFileRegistry, type Message } from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";

/** The domain of every ErrorInfo fencekeeper sends. */
export const ERROR_DOMAIN = "fencekeeper.io";

const file = create(FileDescriptorProtoSchema, {
  name: "google/rpc/error_details.proto",
  package: "google.rpc",
  syntax: "proto3",
  messageType: [
    {
      name: "ErrorInfo",
      field: [
        { name: "reason", number: 1, type: Type.STRING, label: Label.OPTIONAL, jsonName: "reason" },
        { name: "domain", number: 2, type: Type.STRING, label: Label.OPTIONAL, jsonName: "domain" },
        {
          name: "metadata",
          number: 3,
          type: Type.MESSAGE,
          label: Label.REPEATED,
          typeName: ".google.rpc.ErrorInfo.MetadataEntry",
          jsonName: "metadata",
        },
      ],
      nestedType: [
        {
          name: "MetadataEntry",
          field: [
            { name: "key", number: 1, type: Type.STRING, label: Label.OPTIONAL, jsonName: "key" },
            { name: "value", number: 2, type: Type.STRING, label: Label.OPTIONAL, jsonName: "value" },
          ],
          options: { mapEntry: true },
        },
      ],
    },
  ],
});

export type ErrorInfo = Message<"google.rpc.ErrorInfo"> & {
  reason: string;
  domain: string;
  metadata: { [key: string]: string };
};

export const ErrorInfoSchema = createFileRegistry(file, () => undefined).getMessage("google.rpc.ErrorInfo") as GenMessage<ErrorInfo>;
