// The schema the server can describe: every file that defines one of its services, with the files they
// import (google/protobuf/duration.proto, google/rpc/status.proto, ...), looked up by file name, by
// symbol, and by extension, as server reflection asks. Each file is served with its comments when the
// documentation has them (./documentation.ts), bare otherwise.
import { createRegistry, toBinary, type DescFile, type DescService, type Registry } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { documented, type Documentation } from "./documentation.js";

export class DescriptorIndex {
  /** Every file by its name, e.g. "fencekeeper/v1/lease.proto". */
  private readonly files = new Map<string, DescFile>();
  /** The descriptor served for each file: the documented one when there is one, else the embedded one. */
  private readonly served = new Map<string, FileDescriptorProto>();
  private readonly serialized = new Map<string, Uint8Array>();
  private readonly registry: Registry;
  readonly serviceNames: readonly string[];
  /** The names of the files served without their comments, which the documentation lacks. */
  readonly undocumented: readonly string[];

  /** files: more files to describe besides those of the services, e.g. the types of error details. */
  constructor(services: readonly DescService[], files: readonly DescFile[] = [], documentation?: Documentation) {
    const add = (file: DescFile) => {
      if (this.files.has(file.proto.name)) return;
      this.files.set(file.proto.name, file);
      for (const dep of file.dependencies) add(dep);
    };
    for (const s of services) add(s.file);
    for (const f of files) add(f);
    this.registry = createRegistry(...this.files.values());
    this.serviceNames = [...new Set(services.map((s) => s.typeName))].sort();
    const undocumented: string[] = [];
    for (const [name, file] of this.files) {
      const doc = documented(documentation, file);
      if (!doc) undocumented.push(name);
      this.served.set(name, doc ?? file.proto);
    }
    this.undocumented = undocumented;
  }

  /** The file with this name, then every file it imports, directly or not, each serialized. */
  fileByName(name: string): Uint8Array[] | undefined {
    const file = this.files.get(name);
    return file && this.withImports(file);
  }

  /** The file that defines a type, service, method, field or extension, with its imports. */
  fileContainingSymbol(symbol: string): Uint8Array[] | undefined {
    const file = this.definingFile(symbol);
    return file && this.withImports(file);
  }

  /** The file that defines extension number of typeName, with its imports. */
  fileContainingExtension(typeName: string, number: number): Uint8Array[] | undefined {
    const extendee = this.registry.getMessage(typeName);
    const ext = extendee && this.registry.getExtensionFor(extendee, number);
    return ext && this.withImports(ext.file);
  }

  /** The field numbers of every known extension of typeName; undefined for an unknown type. */
  extensionNumbers(typeName: string): number[] | undefined {
    if (!this.registry.getMessage(typeName)) return undefined;
    const numbers: number[] = [];
    for (const desc of this.registry) {
      if (desc.kind === "extension" && desc.extendee.typeName === typeName) numbers.push(desc.number);
    }
    return numbers.sort((a, b) => a - b);
  }

  private definingFile(symbol: string): DescFile | undefined {
    const desc = this.registry.get(symbol);
    if (desc) return desc.file;
    // A member of a type: a method of a service, or a field or oneof of a message.
    const dot = symbol.lastIndexOf(".");
    const parent = dot > 0 ? this.registry.get(symbol.slice(0, dot)) : undefined;
    const member = symbol.slice(dot + 1);
    switch (parent?.kind) {
      case "service":
        return parent.methods.some((m) => m.name === member) ? parent.file : undefined;
      case "message":
        return parent.fields.some((f) => f.name === member) || parent.oneofs.some((o) => o.name === member) ? parent.file : undefined;
      default:
        return undefined;
    }
  }

  private withImports(file: DescFile): Uint8Array[] {
    const seen = new Set<string>();
    const out: Uint8Array[] = [];
    const visit = (f: DescFile) => {
      if (seen.has(f.proto.name)) return;
      seen.add(f.proto.name);
      out.push(this.bytes(f));
      for (const dep of f.dependencies) visit(dep);
    };
    visit(file);
    return out;
  }

  private bytes(file: DescFile): Uint8Array {
    let b = this.serialized.get(file.proto.name);
    if (!b) {
      b = toBinary(FileDescriptorProtoSchema, this.served.get(file.proto.name)!);
      this.serialized.set(file.proto.name, b);
    }
    return b;
  }
}
