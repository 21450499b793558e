// Input checks: what is refused, and that the message says what is allowed.
import { expect } from "chai";
import { DEFAULT_LIMITS } from "../../server/validation/limits.js";
import { checkKey, checkResource, checkToken, ttlSeconds } from "../../server/validation/validate.js";

describe("input validation", () => {
  it("accepts 1 to 256 bytes of UTF-8 without control characters as a resource", () => {
    expect(() => checkResource("orders/eu-west")).not.to.throw();
    expect(() => checkResource("é".repeat(128))).not.to.throw(); // 256 bytes
    expect(() => checkResource("é".repeat(129))).to.throw(/258 bytes; at most 256/);
    expect(() => checkResource("")).to.throw(/empty/);
    expect(() => checkResource("a\u007fb")).to.throw(/U\+007f/);
    expect(() => checkResource("\ud800x")).to.throw(/not valid UTF-8/);
  });

  it("limits keys to 1 KiB", () => {
    expect(() => checkKey("k".repeat(1024))).not.to.throw();
    expect(() => checkKey("k".repeat(1025))).to.throw(/at most 1024/);
  });

  it("rounds TTLs up to whole seconds within the allowed range", () => {
    expect(ttlSeconds(2000, DEFAULT_LIMITS)).to.equal(2);
    expect(ttlSeconds(2500, DEFAULT_LIMITS)).to.equal(3);
    expect(() => ttlSeconds(1999, DEFAULT_LIMITS)).to.throw(/allowed: 2s to 300s/);
    expect(() => ttlSeconds(301_000, DEFAULT_LIMITS)).to.throw(/above the maximum/);
    expect(() => ttlSeconds(undefined, DEFAULT_LIMITS)).to.throw(/missing/);
  });

  it("requires a well-formed token", () => {
    expect(() => checkToken(undefined)).to.throw(/missing/);
    expect(() => checkToken({ resource: "r", generation: 0n, leaseId: 1n })).to.throw(/generation must be a positive/);
    expect(() => checkToken({ resource: "r", generation: 5n, leaseId: -1n })).to.throw(/lease_id must be a positive/);
  });
});
