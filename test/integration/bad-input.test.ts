// The bad-input table of SEMANTICS.md, row by row: each gets its status and a message a person can act
// on, changes nothing, and the server carries on.
import { expect } from "chai";
import { connect } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { FenceMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { failure, uniqueResource, useServer } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const MiB = 1024 * 1024;
/** A token as a client that keeps only resource, generation and lease id sends it. */
const unsigned = (t: FencingToken) => ({ resource: t.resource, generation: t.generation, leaseId: t.leaseId });

describe("bad input gets a clear status and changes nothing", () => {
  const s = useServer(["--max-ttl", "60", "--max-txn-ops", "8"]);
  let resource: string;
  let token: FencingToken;

  beforeEach(async () => {
    resource = uniqueResource("bad");
    token = (await s.lease.acquire({ resource, ttl: ttl(30), holder: "A" })).token!;
    await s.store.put({ resource, key: "k", value: Buffer.from("original"), mutation: { token } });
  });

  afterEach(async () => {
    // Nothing changed: the value and the fence are as the setup left them, and the server still answers.
    const got = await s.store.get({ resource, key: "k" });
    expect(Buffer.from(got.value).toString()).to.equal("original");
    expect(got.fence).to.equal(token.generation);
    expect((await s.store.range({ resource })).entries.map((e) => e.key)).to.deep.equal(["k"]);
    expect(s.server.process.exitCode).to.equal(null);
  });

  const put = (over: Record<string, unknown>) =>
    s.store.put({ resource, key: "k", value: Buffer.from("changed"), mutation: { token }, ...over });

  it("empty, oversized or malformed resource names and keys, keys over 1 KiB, values over 1 MiB: INVALID_ARGUMENT", async () => {
    const cases: [() => Promise<unknown>, RegExp][] = [
      [() => s.lease.acquire({ resource: "", ttl: ttl(5) }), /resource is empty/],
      [() => s.lease.acquire({ resource: "r".repeat(257), ttl: ttl(5) }), /resource is 257 bytes; at most 256/],
      [() => s.lease.acquire({ resource: "bad\u0000name", ttl: ttl(5) }), /control character U\+0000/],
      [() => s.lease.describe({ resource: "tab\there" }), /control character U\+0009/],
      [() => s.store.get({ resource, key: "" }), /key is empty/],
      [() => put({ key: "k".repeat(1025) }), /key is 1025 bytes; at most 1024/],
      [() => put({ key: "new\nline" }), /control character U\+000a/],
      [() => put({ value: Buffer.alloc(MiB + 1) }), /value is 1048577 bytes; at most 1048576/],
      [() => s.store.range({ resource, pageSize: -1 }), /page_size must not be negative/],
      [() => s.store.range({ resource, pageToken: "not-a-token" }), /page_token is malformed/],
    ];
    for (const [call, message] of cases) {
      const err = await failure(call());
      expect(err.code, err.message).to.equal(Code.InvalidArgument);
      expect(err.rawMessage).to.match(message);
    }
  });

  it("TTL below 2 s or above the maximum: INVALID_ARGUMENT stating the allowed range", async () => {
    for (const t of [{ seconds: 1n, nanos: 0 }, { seconds: 0n, nanos: 500_000_000 }, { seconds: 61n, nanos: 0 }, undefined]) {
      const err = await failure(s.lease.acquire({ resource: uniqueResource("ttl"), ttl: t }));
      expect(err.code).to.equal(Code.InvalidArgument);
      expect(err.rawMessage).to.match(/allowed: 2s to 60s/);
    }
  });

  it("a mutation without a token, or with a token for another resource: INVALID_ARGUMENT", async () => {
    let err = await failure(put({ mutation: {} }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.match(/mutation.token is missing/);
    err = await failure(put({ mutation: undefined }));
    expect(err.code).to.equal(Code.InvalidArgument);

    const other = uniqueResource("other");
    const otherToken = (await s.lease.acquire({ resource: other, ttl: ttl(5) })).token!;
    err = await failure(put({ mutation: { token: otherToken } }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.match(/token is for resource ".*other.*" but the request writes/);
    err = await failure(put({ mutation: { token: { ...token, generation: 0n } } }));
    expect(err.code).to.equal(Code.InvalidArgument);
    err = await failure(put({ mutation: { token, mode: 7 as FenceMode } }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.match(/not a FenceMode/);
  });

  it("a token older than the fence, or a lease no longer held under LIVE: FAILED_PRECONDITION with ErrorInfo", async () => {
    // Never issued: a generation beyond the last one issued cannot poison the fence. (Unsigned, as a
    // client that keeps only the three numbers sends it: a signed token with a changed field is refused
    // for its signature before etcd is asked; test/integration/signed-tokens.test.ts.)
    let err = await failure(put({ mutation: { token: { ...unsigned(token), generation: token.generation + 1000n } } }));
    expect(err.code).to.equal(Code.FailedPrecondition);
    expect(err.findDetails(ErrorInfoSchema)[0].reason).to.equal("GENERATION_NOT_ISSUED");

    // LIVE with a lease id that does not hold this generation.
    err = await failure(put({ mutation: { token: { ...unsigned(token), leaseId: token.leaseId + 1n }, mode: FenceMode.LIVE } }));
    expect(err.code).to.equal(Code.FailedPrecondition);
    expect(err.findDetails(ErrorInfoSchema)[0].reason).to.equal("LEASE_NOT_HELD");

    // Older than the fence: a newer generation of the resource has written (on another key).
    await s.lease.release({ token });
    const newer = (await s.lease.acquire({ resource, ttl: ttl(5) })).token!;
    await s.store.put({ resource, key: "k", value: Buffer.from("original"), mutation: { token: newer } });
    err = await failure(put({}));
    expect(err.code).to.equal(Code.FailedPrecondition);
    const info = err.findDetails(ErrorInfoSchema)[0];
    expect(info.reason).to.equal("STALE_TOKEN");
    expect(info.metadata).to.include({ fence: String(newer.generation), generation: String(token.generation) });
    token = newer; // what afterEach checks
  });

  it("renew, keepalive and release of an unknown or expired lease: NOT_FOUND saying so", async () => {
    let err = await failure(s.lease.renew({ leaseId: 12345n }));
    expect(err.code).to.equal(Code.NotFound);
    expect(err.rawMessage).to.match(/expired, was released, or never existed/);
    expect(err.findDetails(ErrorInfoSchema)[0].reason).to.equal("LEASE_NOT_FOUND");

    err = await failure(s.lease.release({ token: { ...unsigned(token), leaseId: 12345n } }));
    expect(err.code).to.equal(Code.NotFound);

    async function* one() {
      yield { leaseId: 12345n };
      yield { leaseId: token.leaseId };
    }
    const answers = [];
    for await (const a of s.lease.keepAlive(one())) answers.push(a);
    expect(answers[0].error!.code).to.equal(Code.NotFound);
    expect(answers[0].error!.message).to.match(/never existed/);
    expect(answers[1].error).to.equal(undefined); // the stream goes on for the other leases
    expect(Number(answers[1].ttl!.seconds)).to.be.within(25, 30);

    err = await failure(s.lease.renew({ leaseId: 0n }));
    expect(err.code).to.equal(Code.InvalidArgument);
  });

  it("Acquire without wait on a held resource: ABORTED with the holder's token", async () => {
    const err = await failure(s.lease.acquire({ resource, ttl: ttl(5), holder: "B" }));
    expect(err.code).to.equal(Code.Aborted);
    expect(err.findDetails(ErrorInfoSchema)[0].metadata).to.include({ generation: String(token.generation), holder: "A" });
  });

  it("too many operations in one Txn, an empty Txn, a key twice: INVALID_ARGUMENT stating the limit", async () => {
    const op = (key: string) => ({ op: { case: "put" as const, value: { key, value: Buffer.from("changed") } } });
    let err = await failure(s.store.txn({ resource, mutation: { token }, ops: Array.from({ length: 9 }, (_, i) => op(`k${i}`)) }));
    expect(err.code).to.equal(Code.InvalidArgument);
    expect(err.rawMessage).to.match(/9 operations; at most 8/);
    err = await failure(s.store.txn({ resource, mutation: { token }, ops: [] }));
    expect(err.code).to.equal(Code.InvalidArgument);
    err = await failure(s.store.txn({ resource, mutation: { token }, ops: [op("k"), op("k")] }));
    expect(err.rawMessage).to.match(/appears twice/);
    err = await failure(s.store.txn({ resource, mutation: { token }, ops: [op("k"), { op: { case: undefined } }] }));
    expect(err.rawMessage).to.match(/ops\[1\] sets neither put nor delete/);
    const big = (key: string) => ({ op: { case: "put" as const, value: { key, value: Buffer.alloc(MiB / 2 + 1) } } });
    err = await failure(s.store.txn({ resource, mutation: { token }, ops: [big("a"), big("b")] }));
    expect(err.rawMessage).to.match(/at most 1048576 bytes \(1 MiB\) in all/);
  });

  it("garbage on the wire: an error status, and the server carries on", async () => {
    const session = connect(s.server.url);
    try {
      for (const body of [Buffer.from([0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff]), Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x05, 0x61]), Buffer.from([0, 0, 0, 0, 9, 1])]) {
        const status = await new Promise<string>((resolve, reject) => {
          const req = session.request({
            ":method": "POST",
            ":path": "/fencekeeper.v1.LeaseService/Describe",
            "content-type": "application/grpc",
            te: "trailers",
          });
          let code = "";
          req.on("response", (h) => (code = String(h["grpc-status"] ?? "")));
          req.on("trailers", (t) => (code = String(t["grpc-status"] ?? code)));
          req.on("close", () => resolve(code));
          req.on("error", reject);
          req.resume();
          req.end(body);
        });
        expect(Number(status), `answer to ${body.toString("hex")}`).to.be.oneOf([Code.InvalidArgument, Code.Internal]);
      }
    } finally {
      session.close();
    }
  });
});
