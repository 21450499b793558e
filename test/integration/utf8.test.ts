// Invalid UTF-8 in a name or key is refused, not rewritten (issue 8, item 6). The bytes \xff and \xfe
// used to arrive both as U+FFFD and name the same resource. The requests here are raw protobuf bytes sent
// by @grpc/grpc-js (no protobuf library on the client side could even produce them from a string), one
// per string field that names something; each must be INVALID_ARGUMENT naming the field, and change nothing.
import { expect } from "chai";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { AcquireRequestSchema, DescribeRequestSchema, ObserveRequestSchema, ReleaseRequestSchema } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import {
  DeleteRequestSchema,
  GetFenceRequestSchema,
  GetRequestSchema,
  PutRequestSchema,
  RangeRequestSchema,
  TxnRequestSchema,
} from "../../gen/ts/fencekeeper/v1/store_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { useServer, uniqueResource } from "../harness/suite.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const FF = new Uint8Array([0xff]);
const FE = new Uint8Array([0xfe]);
const LEASE = "/fencekeeper.v1.LeaseService/";
const STORE = "/fencekeeper.v1.FencedStoreService/";

/** A length-delimited field: a string with any bytes at all, or an embedded message. */
function field(n: number, payload: Uint8Array): Uint8Array {
  return new BinaryWriter().tag(n, WireType.LengthDelimited).bytes(payload).finish();
}
const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

/**
 * A valid message, then fields that override it: a later string field replaces an earlier one, and a
 * later embedded message is merged into the earlier one. So `bytesOf(Schema, valid, field(1, FF))` is
 * the valid request with its field 1 set to the byte \xff.
 */
function bytesOf<D extends DescMessage>(schema: D, valid: MessageInitShape<D>, ...overrides: Uint8Array[]): Uint8Array {
  return concat(toBinary(schema, create(schema, valid)), ...overrides);
}

interface Outcome {
  code: grpc.status;
  details: string;
}

const identity = (b: Buffer) => b;

function unary(client: grpc.Client, path: string, body: Uint8Array): Promise<Outcome> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, Buffer.from(body), (err: grpc.ServiceError | null) =>
      resolve(err ? { code: err.code, details: err.details } : { code: grpc.status.OK, details: "" }),
    );
  });
}

function serverStream(client: grpc.Client, path: string, body: Uint8Array): Promise<Outcome> {
  return new Promise((resolve) => {
    const call = client.makeServerStreamRequest(path, identity, identity, Buffer.from(body));
    call.on("data", () => {
      call.cancel();
      resolve({ code: grpc.status.OK, details: "" });
    });
    call.on("error", (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
  });
}

describe("invalid UTF-8 in names and keys", () => {
  const s = useServer();
  let client: grpc.Client;
  let resource: string;
  let token: FencingToken;
  const tokenInit = () => ({ resource: token.resource, generation: token.generation, leaseId: token.leaseId });
  const mutation = () => ({ token: tokenInit() });

  before(() => {
    client = new grpc.Client(s.server.url.replace("http://", ""), grpc.credentials.createInsecure());
  });
  after(() => client?.close());

  beforeEach(async () => {
    resource = uniqueResource("utf8");
    token = (await s.lease.acquire({ resource, ttl: ttl(30), holder: "A" })).token!;
    await s.store.put({ resource, key: "k", value: Buffer.from("original"), mutation: { token } });
  });

  afterEach(async () => {
    // Nothing changed: the holder, the value and the fence are as the setup left them.
    const held = await s.lease.describe({ resource });
    expect(held).to.deep.include({ held: true, holder: "A", waiters: 0 });
    const got = await s.store.get({ resource, key: "k" });
    expect(Buffer.from(got.value).toString()).to.equal("original");
    expect(got.fence).to.equal(token.generation);
    expect((await s.store.range({ resource })).entries.map((e) => e.key)).to.deep.equal(["k"]);
    // Nor does the name every invalid byte used to become.
    const replaced = await s.lease.describe({ resource: "\ufffd" });
    expect(replaced).to.deep.include({ held: false, waiters: 0 });
    expect((await s.store.getFence({ resource: "\ufffd" })).fence).to.equal(0n);
    expect((await s.store.range({ resource: "\ufffd" })).entries).to.have.length(0);
    expect(s.server.process.exitCode).to.equal(null);
  });

  async function expectRefused(outcome: Promise<Outcome>, fieldName: string) {
    const { code, details } = await outcome;
    expect(grpc.status[code], details).to.equal("INVALID_ARGUMENT");
    expect(details).to.contain(`${fieldName} is not valid UTF-8`);
  }

  for (const [label, bad] of [["\\xff", FF], ["\\xfe", FE]] as const) {
    it(`Acquire of the resource ${label}`, async () => {
      const body = bytesOf(AcquireRequestSchema, { resource: "x", ttl: ttl(10), holder: "B" }, field(1, bad));
      await expectRefused(unary(client, `${LEASE}Acquire`, body), "resource");
    });

    it(`Acquire with wait of the resource ${label}`, async () => {
      const body = bytesOf(AcquireRequestSchema, { resource: "x", ttl: ttl(10), holder: "B", wait: true }, field(1, bad));
      await expectRefused(unary(client, `${LEASE}Acquire`, body), "resource");
    });

    it(`Describe of the resource ${label}`, async () => {
      await expectRefused(unary(client, `${LEASE}Describe`, field(1, bad)), "resource");
    });
  }

  it("\\xff and \\xfe do not name one resource, nor the one U+FFFD names", async () => {
    // Before, the first Acquire took "\ufffd" and the second was refused RESOURCE_HELD by it.
    const first = await unary(client, `${LEASE}Acquire`, bytesOf(AcquireRequestSchema, { resource: "x", ttl: ttl(10) }, field(1, FF)));
    const second = await unary(client, `${LEASE}Acquire`, bytesOf(AcquireRequestSchema, { resource: "x", ttl: ttl(10) }, field(1, FE)));
    expect([grpc.status[first.code], grpc.status[second.code]]).to.deep.equal(["INVALID_ARGUMENT", "INVALID_ARGUMENT"]);
    const valid = await s.lease.acquire({ resource: "\ufffd", ttl: ttl(2), holder: "C" });
    await s.lease.release({ token: valid.token });
  });

  it("invalid bytes inside a longer name, after a valid multi-byte character, or cut short", async () => {
    for (const bytes of [Buffer.from("orders\xff", "latin1"), Buffer.from([0xc3, 0xa9, 0xfe]), Buffer.from([0x61, 0xe2, 0x82]), Buffer.from([0xed, 0xa0, 0x80])]) {
      await expectRefused(unary(client, `${LEASE}Describe`, field(1, bytes)), "resource");
    }
  });

  it("Acquire with the holder \\xff", async () => {
    const body = bytesOf(AcquireRequestSchema, { resource: uniqueResource("other"), ttl: ttl(10) }, field(3, FF));
    await expectRefused(unary(client, `${LEASE}Acquire`, body), "holder");
  });

  it("Observe of the resource \\xff", async () => {
    await expectRefused(serverStream(client, `${LEASE}Observe`, bytesOf(ObserveRequestSchema, {}, field(1, FF))), "resource");
  });

  it("Release with the token's resource \\xff", async () => {
    const body = bytesOf(ReleaseRequestSchema, { token: tokenInit() }, field(1, field(1, FF)));
    await expectRefused(unary(client, `${LEASE}Release`, body), "token.resource");
  });

  it("Put with the resource, the key, the token's resource or the idempotency key \\xff", async () => {
    const put = { resource, key: "k", value: Buffer.from("changed"), mutation: mutation() };
    await expectRefused(unary(client, `${STORE}Put`, bytesOf(PutRequestSchema, put, field(1, FF))), "resource");
    await expectRefused(unary(client, `${STORE}Put`, bytesOf(PutRequestSchema, put, field(2, FF))), "key");
    await expectRefused(unary(client, `${STORE}Put`, bytesOf(PutRequestSchema, put, field(4, field(1, field(1, FF))))), "mutation.token.resource");
    await expectRefused(unary(client, `${STORE}Put`, bytesOf(PutRequestSchema, put, field(4, field(3, FF)))), "idempotency_key");
  });

  it("Put with the token's principal or key id \\xff", async () => {
    const put = { resource, key: "k", value: Buffer.from("changed"), mutation: mutation() };
    await expectRefused(unary(client, `${STORE}Put`, bytesOf(PutRequestSchema, put, field(4, field(1, field(4, FF))))), "mutation.token.principal");
    await expectRefused(unary(client, `${STORE}Put`, bytesOf(PutRequestSchema, put, field(4, field(1, field(5, FF))))), "mutation.token.key_id");
  });

  it("Delete with the key \\xff, and Txn with an operation's key \\xff", async () => {
    await expectRefused(unary(client, `${STORE}Delete`, bytesOf(DeleteRequestSchema, { resource, key: "k", mutation: mutation() }, field(2, FF))), "key");
    // ops: a put of "k2", then a delete of the key \xff.
    const txn = bytesOf(TxnRequestSchema, { resource, ops: [{ op: { case: "put", value: { key: "k2", value: Buffer.from("v") } } }], mutation: mutation() }, field(2, field(2, field(1, FF))));
    await expectRefused(unary(client, `${STORE}Txn`, txn), "ops[1].key");
  });

  it("Get, Range and GetFence with the resource, key or prefix \\xff", async () => {
    await expectRefused(unary(client, `${STORE}Get`, bytesOf(GetRequestSchema, { resource, key: "k" }, field(2, FF))), "key");
    await expectRefused(unary(client, `${STORE}Get`, bytesOf(GetRequestSchema, { resource, key: "k" }, field(1, FE))), "resource");
    await expectRefused(unary(client, `${STORE}Range`, bytesOf(RangeRequestSchema, { resource }, field(2, FF))), "prefix");
    await expectRefused(unary(client, `${STORE}GetFence`, bytesOf(GetFenceRequestSchema, {}, field(1, FF))), "resource");
  });

  it("over Connect JSON too: a body that is not UTF-8 is INVALID_ARGUMENT naming the field", async () => {
    const body = concat(Buffer.from('{"resource": "'), FF, Buffer.from('"}'));
    const res = await fetch(`${s.server.url}/fencekeeper.v1.LeaseService/Describe`, { method: "POST", headers: { "content-type": "application/json" }, body });
    const answer = (await res.json()) as { code?: string; message?: string };
    expect(res.status, JSON.stringify(answer)).to.equal(400);
    expect(answer.code).to.equal("invalid_argument");
    expect(answer.message).to.match(/resource.*invalid UTF8|resource is not valid UTF-8/);
  });

  it("valid names, multi-byte ones too, still work", async () => {
    const name = uniqueResource("é😀");
    const body = bytesOf(AcquireRequestSchema, { resource: "x", ttl: ttl(10), holder: "B" }, field(1, Buffer.from(name)));
    expect(grpc.status[(await unary(client, `${LEASE}Acquire`, body)).code]).to.equal("OK");
    expect(await s.lease.describe({ resource: name })).to.deep.include({ held: true, holder: "B" });
  });
});
