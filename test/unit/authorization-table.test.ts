// The call pipeline's table of method -> verb and resource (server/rpc/authorization.ts) names every
// method of both services, and a method missing from it stops the server at startup, so that a new
// method cannot go unauthorized.
import { expect } from "chai";
import { FencedStoreService } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { Health } from "../../gen/ts-grpc/grpc/health/v1/health_pb.js";
import { checkRules } from "../../server/rpc/authorization.js";

describe("the authorization table", () => {
  it("has an entry for every method of LeaseService and FencedStoreService", () => {
    expect(() => checkRules([LeaseService, FencedStoreService])).not.to.throw();
  });

  it("names a method it has no entry for", () => {
    expect(() => checkRules([Health])).to.throw(/grpc\.health\.v1\.Health\/Check has no entry in server\/rpc\/authorization\.ts/);
  });
});
