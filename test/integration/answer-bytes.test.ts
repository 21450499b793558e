// Answers bounded by bytes (docs/budgets.md, "Answers and slow readers"). Resources whose holders
// publish 1 MiB values, listed with page_size 500 as the console asks: every page, in protobuf over
// gRPC and in JSON over Connect, stays near the 1 MiB answer budget (at least one resource a page),
// the pages together list every resource once, and each value is sent once per answer. Describe pages
// the shared holders of one resource, Observe leaves out the values past the budget (value_left_out),
// and the store's Range pages stay under the budget in JSON too.
import { expect } from "chai";
import { toBinary } from "@bufbuild/protobuf";
import { AcquireMode, type FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { DescribeResponseSchema, ListResourcesResponseSchema, ObserveResponseSchema, type Holder } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { RangeResponseSchema } from "../../gen/ts/fencekeeper/v1/store_pb.js";
import { uniqueResource, useServer } from "../harness/suite.js";

const MiB = 1024 * 1024;
const BUDGET = MiB;
/** An answer holds the budget, or one item when it alone is larger: one 1 MiB value and its fields. */
const MOST = Math.max(BUDGET, MiB) + 16 * 1024;
const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
/** A 1 MiB value that names its owner in its first bytes. */
const valueOf = (name: string, size = MiB) => {
  const v = Buffer.alloc(size, 0x61);
  v.write(name);
  return new Uint8Array(v);
};
const ownerOf = (v: Uint8Array) => Buffer.from(v.subarray(0, 64)).toString().replace(/a+$/, "");

describe("answers bounded by bytes: ListResources, Describe, Observe and Range", function () {
  this.timeout(180_000);
  // Megabytes of values in seconds, on purpose: the caller's history budget (docs/budgets.md, tested in
  // budgets.test.ts) is off, so that what is measured here is the answers' and the streams' own bounds.
  const s = useServer(["--max-history-bytes-per-second", "0"]);
  const RESOURCES = 24;
  let prefix: string;
  const tokens: FencingToken[] = [];

  before(async function () {
    this.timeout(180_000);
    prefix = uniqueResource("big-values") + "/";
    for (let i = 0; i < RESOURCES; i++) {
      const resource = `${prefix}${String(i).padStart(3, "0")}`;
      tokens.push((await s.lease.acquire({ resource, ttl: ttl(120), holder: `leader-${i}`, value: valueOf(resource) })).token!);
    }
  });

  it("ListResources with page_size 500 over gRPC: pages near 1 MiB, every resource once, each value once (in DescribeResponse.value, not again in holders)", async () => {
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await s.lease.listResources({ prefix, pageSize: 500, pageToken });
      pages++;
      const bytes = toBinary(ListResourcesResponseSchema, page).length;
      expect(bytes, `page ${pages}: ${bytes} bytes`).to.be.at.most(MOST);
      expect(page.resources.length, "at least one resource a page").to.be.at.least(1);
      for (const r of page.resources) {
        seen.push(r.resource);
        expect(ownerOf(r.state!.value)).to.equal(r.resource);
        expect(r.state!.holders).to.have.length(1);
        expect(r.state!.holders[0].value, "the exclusive holder's value is not sent twice").to.have.length(0);
      }
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(seen).to.deep.equal(tokens.map((t) => t.resource));
    expect(pages, "24 MiB of values take many pages").to.be.at.least(RESOURCES / 2);
  });

  it("ListResources with page_size 500 over Connect JSON: every answer body stays under the budget's JSON size", async () => {
    let pageToken = "";
    let total = 0;
    do {
      const res = await fetch(`${s.server.url}/fencekeeper.v1.LeaseService/ListResources`, {
        method: "POST",
        headers: { "content-type": "application/json", "connect-protocol-version": "1" },
        body: JSON.stringify({ prefix, pageSize: 500, pageToken }),
      });
      const body = Buffer.from(await res.arrayBuffer());
      expect(res.status, body.subarray(0, 300).toString()).to.equal(200);
      // base64 makes a value a third larger.
      expect(body.length, `a JSON page of ${body.length} bytes`).to.be.at.most(Math.ceil((MOST * 4) / 3) + 64 * 1024);
      const page = JSON.parse(body.toString()) as { resources?: { resource: string }[]; nextPageToken?: string };
      total += page.resources?.length ?? 0;
      pageToken = page.nextPageToken ?? "";
    } while (pageToken !== "");
    expect(total).to.equal(RESOURCES);
  });

  describe("a resource with more shared holders' values than one answer takes", () => {
    const HOLDERS = 6;
    const SIZE = 400 * 1024;
    let resource: string;
    before(async function () {
      resource = uniqueResource("shared-values");
      for (let i = 0; i < HOLDERS; i++) {
        await s.lease.acquire({ resource, ttl: ttl(120), holder: `reader-${i}`, mode: AcquireMode.SHARED, value: valueOf(`reader-${i}`, SIZE) });
      }
    });

    it("Describe gives the holders a page at a time, oldest first, each page within the budget, following next_holders_page_token", async () => {
      const seen: string[] = [];
      let holdersPageToken = "";
      let pages = 0;
      do {
        const d = await s.lease.describe({ resource, holdersPageToken });
        pages++;
        expect(toBinary(DescribeResponseSchema, d).length).to.be.at.most(MOST);
        expect(d.held).to.equal(true);
        for (const h of d.holders) {
          expect(ownerOf(h.value)).to.equal(h.holder);
          seen.push(h.holder);
        }
        holdersPageToken = d.nextHoldersPageToken;
      } while (holdersPageToken !== "");
      expect(seen).to.deep.equal(Array.from({ length: HOLDERS }, (_, i) => `reader-${i}`));
      expect(pages).to.be.at.least(2);
      const bad = await s.lease.describe({ resource, holdersPageToken: "not-a-token" }).then(
        () => undefined,
        (e: { code: number; rawMessage: string }) => e,
      );
      expect(bad?.code).to.equal(3); // INVALID_ARGUMENT
      expect(bad?.rawMessage).to.match(/holders_page_token/);
    });

    it("ListResources lists such a resource alone, with its first holders and the token to go on with Describe", async () => {
      const page = await s.lease.listResources({ prefix: resource, pageSize: 500 });
      expect(page.resources.map((r) => r.resource)).to.deep.equal([resource]);
      expect(toBinary(ListResourcesResponseSchema, page).length).to.be.at.most(MOST);
      expect(page.resources[0].state!.nextHoldersPageToken).to.not.equal("");
    });

    it("Observe's first message stays within the budget: the values past it are left out, marked value_left_out", async () => {
      const stop = new AbortController();
      let first: { holders: Holder[] } | undefined;
      for await (const o of s.lease.observe({ resource }, { signal: stop.signal })) {
        expect(toBinary(ObserveResponseSchema, o).length).to.be.at.most(MOST);
        first = o;
        break;
      }
      stop.abort();
      const holders = first!.holders;
      expect(holders).to.have.length(HOLDERS);
      const sent = holders.filter((h) => h.value.length > 0);
      const leftOut = holders.filter((h) => h.valueLeftOut);
      expect(sent.length + leftOut.length).to.equal(HOLDERS);
      expect(leftOut.length).to.be.at.least(1);
      for (const h of leftOut) expect(h.value).to.have.length(0);
      for (const h of sent) expect(ownerOf(h.value)).to.equal(h.holder);
    });
  });

  it("Range pages of 1 MiB values stay within the budget in protobuf and in JSON", async () => {
    const resource = uniqueResource("range-values");
    const { token } = await s.lease.acquire({ resource, ttl: ttl(120), holder: "writer" });
    for (let i = 0; i < 5; i++) await s.store.put({ resource, key: `k${i}`, value: valueOf(`k${i}`), mutation: { token } });
    let pageToken = "";
    const keys: string[] = [];
    do {
      const page = await s.store.range({ resource, pageSize: 1000, pageToken });
      expect(toBinary(RangeResponseSchema, page).length).to.be.at.most(MOST);
      keys.push(...page.entries.map((e) => e.key));
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(keys).to.deep.equal(["k0", "k1", "k2", "k3", "k4"]);
    const res = await fetch(`${s.server.url}/fencekeeper.v1.FencedStoreService/Range`, {
      method: "POST",
      headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: JSON.stringify({ resource, pageSize: 1000 }),
    });
    const body = Buffer.from(await res.arrayBuffer());
    expect(res.status).to.equal(200);
    expect(body.length, `a JSON page of ${body.length} bytes`).to.be.at.most(Math.ceil((MOST * 4) / 3) + 64 * 1024);
  });
});
