// The contract's documentation, for reflection to serve. The descriptors embedded in the generated
// TypeScript carry no source info (protoc-gen-es leaves the comments out to keep the code small), so a
// tool exploring by reflection would read bare signatures. `npm run generate` also writes every file the
// server describes, with its comments, into gen/descriptors/fencekeeper.binpb (a FileDescriptorSet made
// by `buf build`); reflection serves a file from there when it describes exactly the embedded one.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { clone, equals, fromBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";

/** Where `npm run generate` writes the documented descriptors, from the repository's root. */
export const DOCUMENTED_DESCRIPTORS = "gen/descriptors/fencekeeper.binpb";

/** Documented file descriptors by file name, e.g. "fencekeeper/v1/lease.proto". */
export type Documentation = ReadonlyMap<string, FileDescriptorProto>;

/**
 * The path of the documented descriptors, or undefined when there are none. Looked for from this
 * module's folder upwards, so that the sources and compiled output elsewhere both find it.
 */
export function findDocumentation(): string | undefined {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, DOCUMENTED_DESCRIPTORS);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) return undefined;
  }
}

/** Reads the documented descriptors (some tens of milliseconds: done at the first reflection question). */
export function loadDocumentation(path: string): Documentation {
  const set = fromBinary(FileDescriptorSetSchema, readFileSync(path));
  return new Map(set.file.map((f) => [f.name, f]));
}

/**
 * The documented version of an embedded file, or undefined if there is none or it describes something
 * else (a descriptor set older or newer than the generated code): comments from another version of a
 * file would document fields that are not there.
 */
export function documented(docs: Documentation | undefined, file: DescFile): FileDescriptorProto | undefined {
  const doc = docs?.get(file.proto.name);
  if (!doc) return undefined;
  const bare = clone(FileDescriptorProtoSchema, doc);
  bare.sourceCodeInfo = undefined;
  return equals(FileDescriptorProtoSchema, bare, file.proto) ? doc : undefined;
}
