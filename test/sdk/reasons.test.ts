// The TypeScript SDK (client/) against the table of every ErrorReason in docs/client-semantics.md, as
// go.test.ts, python.test.ts and java.test.ts hold the other libraries against it: each reason of the
// generated enum, sent with its code in a google.rpc.ErrorInfo, becomes the type the table names.
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { toFencekeeperError } from "../../client/error-mapping.js";
import { documentedReasons, generatedReasons } from "./reasons-table.js";

/** FAILED_PRECONDITION -> Code.FailedPrecondition. */
function code(name: string): Code {
  const pascal = name.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
  const c = (Code as unknown as Record<string, Code>)[pascal];
  if (c === undefined) throw new Error(`no gRPC code ${name}`);
  return c;
}

describe("TypeScript SDK: the error type of every ErrorReason", () => {
  it("raises, for every reason of the generated ErrorReason enum, the type the table of docs/client-semantics.md names; NOT_FOUND without a reason is no lease-not-found", () => {
    const table = documentedReasons();
    const generated = generatedReasons();
    expect(Object.keys(table).sort(), "the reasons with a row in docs/client-semantics.md").to.deep.equal(generated);
    for (const reason of generated) {
      const info = create(ErrorInfoSchema, { reason, domain: "fencekeeper.io", metadata: {} });
      const err = toFencekeeperError(new ConnectError("refused", code(table[reason].code), undefined, [{ desc: ErrorInfoSchema, value: info }]));
      expect(err.reason, reason).to.equal(reason);
      expect(err.constructor.name, reason).to.equal(table[reason].TypeScript);
    }
    expect(toFencekeeperError(new ConnectError("not found", Code.NotFound)).constructor.name).to.equal("FencekeeperError");
  });
});
