// Issue 8, item 3: bad input is never answered as retryable (UNAVAILABLE) or as a fault (INTERNAL), so
// that clients do not retry it for ever: tampered page tokens, a Range over values larger than one etcd
// answer, transaction limits beyond what etcd accepts, and malformed protobuf.
import { randomBytes } from "node:crypto";
import { expect } from "chai";
import { Code, ConnectError } from "@connectrpc/connect";
import type * as grpc from "@grpc/grpc-js";
import { Etcd3 } from "etcd3";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import type { FencingToken } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor } from "../harness/clients.js";
import { startServer, type TestServer } from "../harness/server.js";
import { failure, uniqueResource, useServer } from "../harness/suite.js";
import { grpcWeb, rawGrpcClient, rawGrpcUnary } from "../harness/wire.js";

const ttl = (s: number) => ({ seconds: BigInt(s), nanos: 0 });
const MiB = 1024 * 1024;

/** A next_page_token with its snapshot revision ("v") replaced. */
function withRevision(pageToken: string, v: string): string {
  const c = JSON.parse(Buffer.from(pageToken, "base64url").toString("utf8"));
  expect(c.v, "the page token carries its revision as v").to.be.a("string");
  return Buffer.from(JSON.stringify({ ...c, v })).toString("base64url");
}

/** Starts a server that must refuse to start: its exit code and everything it logged. */
async function refusedStart(etcd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  let server: TestServer;
  try {
    server = await startServer({ etcd, args });
  } catch (err) {
    const m = /server exited with (\S+) before serving:\n([\s\S]*)$/.exec((err as Error).message);
    if (!m) throw err;
    return { code: m[1] === "null" ? null : Number(m[1]), output: m[2] };
  }
  await server.stop();
  throw new Error(`the server started with ${args.join(" ")}`);
}

describe("hardening: bad input is not answered as retryable (issue 8, item 3)", function () {
  this.timeout(60_000);
  // Five values of 1 MiB written back to back pass a caller's history budget (docs/budgets.md) on a fast
  // machine: what these tests look at is how bad input is answered, not that budget.
  const s = useServer(["--max-history-bytes-per-second", "0"]);
  let resource: string;
  let token: FencingToken;

  beforeEach(async () => {
    resource = uniqueResource("retry");
    token = (await s.lease.acquire({ resource, ttl: ttl(60), holder: "A" })).token!;
  });

  describe("a Range page_token with a tampered revision", () => {
    let pageToken: string;

    beforeEach(async () => {
      for (const k of ["a", "b", "c"]) await s.store.put({ resource, key: k, value: Buffer.from(k), mutation: { token } });
      const first = await s.store.range({ resource, pageSize: 1 });
      expect(first.entries.map((e) => e.key)).to.deep.equal(["a"]);
      pageToken = first.nextPageToken;
      expect(pageToken).to.not.equal("");
    });

    it("99999999, a revision etcd has not reached: OUT_OF_RANGE", async () => {
      const err = await failure(s.store.range({ resource, pageSize: 1, pageToken: withRevision(pageToken, "99999999") }));
      expect(Code[err.code], err.message).to.equal("OutOfRange");
    });

    it("18446744073709551616 (2^64), and 2^63, no int64: INVALID_ARGUMENT", async () => {
      for (const v of ["18446744073709551616", "9223372036854775808"]) {
        const err = await failure(s.store.range({ resource, pageSize: 1, pageToken: withRevision(pageToken, v) }));
        expect(Code[err.code], `${v}: ${err.message}`).to.equal("InvalidArgument");
        expect(err.rawMessage).to.match(/page_token/);
      }
    });

    it("a revision etcd has compacted: FAILED_PRECONDITION with reason REVISION_COMPACTED", async () => {
      const put = await s.store.put({ resource, key: "d", value: Buffer.from("d"), mutation: { token } });
      const etcd = new Etcd3({ hosts: s.etcd.endpoint });
      try {
        await etcd.kv.compact({ revision: put.commit!.revision.toString(), physical: true });
      } finally {
        etcd.close();
      }
      const err = await failure(s.store.range({ resource, pageSize: 1, pageToken }));
      expect(Code[err.code], err.message).to.equal("FailedPrecondition");
      expect(err.findDetails(ErrorInfoSchema).map((i) => i.reason)).to.deep.equal(["REVISION_COMPACTED"]);
      // The listing starts again without a token.
      expect((await s.store.range({ resource })).entries.map((e) => e.key)).to.deep.equal(["a", "b", "c", "d"]);
    });
  });

  it("Range at the default page size over 5 values of 1 MiB under one prefix: pages that fit, and every value intact", async () => {
    const values = new Map<string, Buffer>();
    for (let i = 0; i < 5; i++) {
      const value = randomBytes(MiB);
      values.set(`big/${i}`, value);
      await s.store.put({ resource, key: `big/${i}`, value, mutation: { token } });
    }
    const seen = new Map<string, Buffer>();
    let pageToken = "";
    let pages = 0;
    do {
      const page = await s.store.range({ resource, prefix: "big/", pageToken });
      expect(page.entries.length, "a page holds at least one entry").to.be.greaterThan(0);
      for (const e of page.entries) seen.set(e.key, Buffer.from(e.value));
      pageToken = page.nextPageToken;
      expect(++pages).to.be.at.most(5);
    } while (pageToken);
    expect([...seen.keys()]).to.deep.equal([...values.keys()]);
    for (const [k, v] of values) expect(seen.get(k)!.equals(v), `${k} came back changed`).to.equal(true);
  });

  describe("transaction limits that must fit etcd's (128 operations by default)", () => {
    // The per-resource quota (on by default) compares each operation's entry, and the usage key.
    for (const [fits, args] of [
      [122, []],
      [126, ["--max-bytes-per-resource", "0"]],
    ] as const) {
      it(`--max-txn-ops 1000${args.length ? ` ${args.join(" ")}` : ""}: the server refuses to start, naming --max-txn-ops and the largest value that fits (${fits})`, async () => {
        const { code, output } = await refusedStart(s.etcd.endpoint, ["--max-txn-ops", "1000", ...args]);
        expect(code, output).to.not.equal(0);
        expect(output).to.contain("--max-txn-ops");
        expect(output).to.match(new RegExp(`\\b${fits}\\b`));
      });
    }

    it("--etcd-max-txn-ops 200 against an etcd that accepts 128: the server refuses to start, naming --etcd-max-txn-ops", async () => {
      const { code, output } = await refusedStart(s.etcd.endpoint, ["--etcd-max-txn-ops", "200"]);
      expect(code, output).to.not.equal(0);
      expect(output).to.contain("--etcd-max-txn-ops");
      expect(output, "a setting the server knows, refused for what etcd accepts").to.match(/\b200\b/).and.not.match(/unknown option/);
    });

    for (const [n, args] of [
      [122, []],
      [126, ["--max-bytes-per-resource", "0"]],
    ] as const) {
      it(`--max-txn-ops ${n}${args.length ? ` ${args.join(" ")}` : ""}: a Txn of ${n} operations commits (also with an idempotency key, and beside other writes); one of ${n + 1} is INVALID_ARGUMENT stating the limit`, async () => {
        const server = await startServer({ etcd: s.etcd.endpoint, args: ["--max-txn-ops", String(n), ...args] });
        try {
          const c = clientsFor(server.url);
          const r = uniqueResource("txn");
          const t = (await c.lease.acquire({ resource: r, ttl: ttl(60) })).token!;
          const ops = (count: number, tag: string) =>
            Array.from({ length: count }, (_, i) => ({ op: { case: "put" as const, value: { key: `${tag}${i}`, value: Buffer.from(tag) } } }));

          await c.store.txn({ resource: r, mutation: { token: t }, ops: ops(n, "plain") });
          await c.store.txn({ resource: r, mutation: { token: t, idempotencyKey: `txn-${r}` }, ops: ops(n, "keyed") });
          // Beside concurrent writes, which the server may pack into the same etcd request.
          const other = uniqueResource("txn-other");
          const ot = (await c.lease.acquire({ resource: other, ttl: ttl(60) })).token!;
          await Promise.all([
            c.store.txn({ resource: r, mutation: { token: t, idempotencyKey: `txn2-${r}` }, ops: ops(n, "busy") }),
            // Under the same token as the Puts below, so that it may share their guard in one transaction.
            c.store.txn({ resource: r, mutation: { token: t }, ops: ops(n, "group") }),
            ...Array.from({ length: 20 }, (_, i) => c.store.put({ resource: other, key: `p${i}`, value: Buffer.from("p"), mutation: { token: ot } })),
            ...Array.from({ length: 5 }, (_, i) => c.store.put({ resource: r, key: `q${i}`, value: Buffer.from("q"), mutation: { token: t } })),
          ]);
          const listed = await c.store.range({ resource: r, pageSize: 1000, keysOnly: true });
          expect(listed.entries.length).to.equal(4 * n + 5);

          for (const idempotencyKey of ["", `txn3-${r}`]) {
            const err = await failure(c.store.txn({ resource: r, mutation: { token: t, idempotencyKey }, ops: ops(n + 1, "over") }));
            expect(Code[err.code], err.message).to.equal("InvalidArgument");
            expect(err.rawMessage).to.match(new RegExp(`${n + 1} operations; at most ${n}`));
          }
          expect((await c.store.range({ resource: r, prefix: "over", keysOnly: true })).entries).to.have.length(0);
        } finally {
          await server.stop();
        }
      });
    }
  });

  describe("malformed protobuf as the message of Put", () => {
    const PUT = "/fencekeeper.v1.FencedStoreService/Put";
    const garbage = [
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff]), // a tag whose varint never ends
      Buffer.from([0x0a, 0x05, 0x61]), // field 1, 5 bytes announced, 1 sent
      Buffer.from([0x0f, 0x01]), // wire type 7 does not exist
      Buffer.from("this is not protobuf at all"),
    ];
    let client: grpc.Client;
    before(() => (client = rawGrpcClient(s.server.url)));
    after(() => client?.close());

    it("over gRPC (@grpc/grpc-js, identity serializers): INVALID_ARGUMENT, not INTERNAL", async () => {
      for (const body of garbage) {
        const st = await rawGrpcUnary(client, PUT, body);
        expect(Code[st.code] ?? "OK", `${body.toString("hex")}: ${st.message}`).to.equal("InvalidArgument");
      }
    });

    it("over gRPC-Web (HTTP/1.1, application/grpc-web+proto): INVALID_ARGUMENT, not INTERNAL", async () => {
      for (const body of garbage) {
        const st = await grpcWeb(s.server.url, PUT, body);
        expect(Code[st.code] ?? "OK", `${body.toString("hex")}: ${st.message}`).to.equal("InvalidArgument");
      }
    });
  });
});
