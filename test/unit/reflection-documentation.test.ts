// The documentation that reflection serves: the committed descriptor set documents the generated code,
// and a file is served with comments only when they describe exactly that file (else bare, as before).
import { expect } from "chai";
import { clone, fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { DescriptorIndex } from "../../server/reflection/descriptor-index.js";
import { documented, findDocumentation, loadDocumentation } from "../../server/reflection/documentation.js";

const LEASE = "fencekeeper/v1/lease.proto";

describe("reflection's documentation (gen/descriptors)", () => {
  it("is found from the sources and documents every file that LeaseService's file needs", () => {
    const path = findDocumentation();
    expect(path, "gen/descriptors/fencekeeper.binpb is found").to.be.a("string");
    const docs = loadDocumentation(path!);
    const index = new DescriptorIndex([LeaseService], [], docs);
    expect(index.undocumented).to.deep.equal([]);
    const [lease] = index.fileByName(LEASE)!.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    expect(lease.sourceCodeInfo?.location.some((l) => l.leadingComments.includes("Acquire"))).to.equal(true);
  });

  it("is not used for a file it describes otherwise (stale), which is served bare and named", () => {
    const docs = loadDocumentation(findDocumentation()!);
    const stale = clone(FileDescriptorProtoSchema, docs.get(LEASE)!);
    stale.messageType[0].field.pop();
    const staleDocs = new Map(docs).set(LEASE, stale);
    expect(documented(staleDocs, LeaseService.file)).to.equal(undefined);

    const index = new DescriptorIndex([LeaseService], [], staleDocs);
    expect(index.undocumented).to.deep.equal([LEASE]);
    const [lease] = index.fileByName(LEASE)!;
    expect(lease).to.deep.equal(toBinary(FileDescriptorProtoSchema, LeaseService.file.proto));
  });

  it("is optional: without it, every file is served bare", () => {
    const index = new DescriptorIndex([LeaseService], []);
    expect(index.undocumented).to.include(LEASE);
    const [lease] = index.fileByName(LEASE)!.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    expect(lease.sourceCodeInfo).to.equal(undefined);
  });
});
