// The key layout: fixed-width generations order byte-wise as numbers; resources never share a prefix.
import { expect } from "chai";
import { KeyLayout, decodeGeneration, delayLeaseOf, delayedLeaseIds, encodeGeneration, prefixEnd } from "../../server/etcd/keys.js";

describe("etcd key layout", () => {
  const keys = new KeyLayout("/fk/");

  it("encodes generations so that byte order is numeric order", () => {
    const gens = [0n, 1n, 9n, 10n, 99n, 100n, 123456789n, 2n ** 63n - 1n];
    const encoded = gens.map(encodeGeneration);
    const sorted = [...encoded].sort(Buffer.compare);
    expect(sorted.map((b) => decodeGeneration(b))).to.deep.equal(gens);
    expect(decodeGeneration(undefined)).to.equal(0n);
  });

  it("keeps one resource's keys out of another's range, whatever the names", () => {
    const a = keys.dataPrefix("a");
    const ab = keys.dataKey("a/b", "x");
    const end = prefixEnd(a);
    expect(Buffer.compare(ab, a) >= 0 && Buffer.compare(ab, end) < 0).to.equal(false);
    expect(keys.linePrefix("a/b").toString()).to.equal("/fk/r/a%2Fb/q/");
  });

  it("reads the resource back from a holder key (owner or shared), and from no other key", () => {
    for (const r of ["a", "a/b", "ä ö/%2F", ""]) {
      expect(keys.heldResourceOf(keys.ownerKey(r))).to.equal(r);
      expect(keys.heldResourceOf(keys.sharedKey(r, 42n))).to.equal(r);
    }
    for (const other of [keys.lockDelayKey("a"), keys.lineKey("a", 1n), keys.sharedLineKey("a", 1n), keys.dataKey("a", "owner"), keys.bindingKey(1n), keys.sessionKey(1n)]) {
      expect(keys.heldResourceOf(other), other.toString()).to.equal(undefined);
    }
    expect(new KeyLayout("/other/").heldResourceOf(keys.ownerKey("a"))).to.equal(undefined);
  });

  it("puts the lock-delay key between the owner key and the line, where Observe's watch sees it", () => {
    const [owner, delay, line] = [keys.ownerKey("r"), keys.lockDelayKey("r"), keys.linePrefix("r")];
    expect(Buffer.compare(owner, delay) < 0 && Buffer.compare(delay, line) < 0).to.equal(true);
  });

  it("tells a delayed acquisition's lease id, and its delay lease, from the id alone", () => {
    // A fixed sequence (xorshift32), so that the test is the same on every run.
    let x = 2463534242;
    const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), x >>> 0);
    for (let i = 0; i < 10_000; i++) {
      const { lease, delayLease } = delayedLeaseIds(next());
      expect(lease > 0n && lease < 2n ** 63n && delayLease > 0n && delayLease < 2n ** 63n).to.equal(true);
      expect(delayLeaseOf(lease)).to.equal(delayLease);
      // The delay lease is no delayed acquisition's: it has no delay lease of its own.
      expect(delayLeaseOf(delayLease)).to.equal(undefined);
      // Ids etcd chooses (any 63 bits) are taken for a delayed acquisition's only by a 31-bit coincidence.
      const other = ((BigInt(next()) << 32n) | BigInt(next())) & (2n ** 63n - 1n);
      expect(delayLeaseOf(other)).to.equal(undefined);
      // So is one whose check bits are off.
      expect(delayLeaseOf(lease ^ 1n)).to.equal(undefined);
    }
  });

  it("puts shared waiters in the line after every exclusive waiter, and shared holders after the line, for Observe's one range", () => {
    const inRange = (k: Buffer, start: Buffer, end: Buffer) => Buffer.compare(k, start) >= 0 && Buffer.compare(k, end) < 0;
    const line = keys.linePrefix("r");
    const sharedLine = keys.sharedLinePrefix("r");
    for (const lease of [1n, 0xabcdefn, 2n ** 63n - 1n]) {
      const nonce = Buffer.from("ffffffffffffffff");
      const exclusive = Buffer.concat([keys.lineKey("r", lease), nonce]);
      const shared = Buffer.concat([keys.sharedLineKey("r", lease), nonce]);
      // Exclusive waiters are [q/, q/s/); shared ones inside the line, after them.
      expect(inRange(exclusive, line, sharedLine)).to.equal(true);
      expect(inRange(shared, line, prefixEnd(line))).to.equal(true);
      expect(inRange(shared, line, sharedLine)).to.equal(false);
      // A session's exclusive places do not take in its shared ones.
      expect(inRange(shared, keys.lineKey("r", lease), prefixEnd(keys.lineKey("r", lease)))).to.equal(false);
      // Observe watches [owner, end of s/): the owner, the whole line and the shared holders, no other key of the resource.
      const holder = keys.sharedKey("r", lease);
      for (const k of [exclusive, shared, holder]) expect(inRange(k, keys.ownerKey("r"), prefixEnd(keys.sharedPrefix("r")))).to.equal(true);
    }
    for (const k of [keys.issuedKey("r"), keys.fenceKey("r"), keys.dataKey("r", "zzz")]) {
      expect(inRange(k, keys.ownerKey("r"), prefixEnd(keys.sharedPrefix("r")))).to.equal(false);
    }
  });

  it("maps store keys to etcd keys and back", () => {
    const k = keys.dataKey("res", "dir/ключ");
    expect(keys.storeKey("res", k)).to.equal("dir/ключ");
  });

  it("computes the end of a prefix range", () => {
    expect(prefixEnd(Buffer.from("ab"))).to.deep.equal(Buffer.from("ac"));
    expect(prefixEnd(Buffer.from([0x61, 0xff]))).to.deep.equal(Buffer.from([0x62]));
  });

  it("refuses a prefix that does not end with a slash", () => {
    expect(() => new KeyLayout("/fk")).to.throw(/must end with/);
  });
});
