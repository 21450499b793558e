// The Host rule (server/rpc/host-rule.ts) on its own: which Host headers a listener without
// authentication answers. The API port and the console apply it (test/integration/host-rule.test.ts,
// test/operations/console.test.ts).
import { expect } from "chai";
import { hostRule } from "../../server/rpc/host-rule.js";

describe("the Host rule", () => {
  const rule = hostRule("127.0.0.1", ["fk.internal", "Other.Example."]);

  it("answers IP addresses, localhost and the names given, whatever the port, case or trailing dot", () => {
    for (const host of ["127.0.0.1:50051", "10.0.0.7", "[::1]:8080", "[fe80::1%eth0]", "localhost", "LocalHost:1", "localhost.", "fk.internal:443", "other.example"]) {
      expect(rule.allows(host), host).to.equal(true);
    }
  });

  it("a request that names no host is not a browser's: answered", () => {
    expect(rule.allows(undefined)).to.equal(true);
    expect(rule.allows("")).to.equal(true);
  });

  it("refuses every other name, and names that only look like an allowed one", () => {
    for (const host of ["rebind.evil.example", "rebind.evil.example:50051", "fk.internal.evil.example", "evil.fk.internal", "127.0.0.1.nip.io", "localhost.evil.example", "[::1", "[::1]x", "a:b:c", "999.1.1.1"]) {
      expect(rule.allows(host), host).to.equal(false);
    }
  });

  it("the listen host, when it is a name, is answered; * answers any name", () => {
    expect(hostRule("fencekeeper.local").allows("fencekeeper.local:50051")).to.equal(true);
    expect(hostRule("fencekeeper.local").allows("other.local")).to.equal(false);
    expect(hostRule("0.0.0.0", ["*"]).allows("anything.example")).to.equal(true);
  });
});
