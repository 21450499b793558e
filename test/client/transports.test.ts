// The SDK's unary calls go through grpc-js by default and through connect-node with transport: "connect"
// (client/grpc-js-transport.ts). Whichever it is, a caller must see the same thing: each kind of failure
// is driven through both clients against one real server, and their errors compared field by field.
import { expect } from "chai";
import { FencekeeperClient, type FencekeeperError } from "../../client/index.js";
import { freePort } from "../../server/etcd/embedded.js";
import { uniqueResource, useServer } from "../harness/suite.js";

type Transport = "grpc-js" | "connect";
const TRANSPORTS: Transport[] = ["grpc-js", "connect"];

/** What a caller can read of an error. */
function seen(err: unknown) {
  const e = err as FencekeeperError;
  return { class: e?.constructor?.name, code: e?.code, reason: e?.reason, message: e?.message, metadata: e?.metadata };
}

async function failure(p: Promise<unknown>): Promise<ReturnType<typeof seen>> {
  try {
    await p;
  } catch (err) {
    return seen(err);
  }
  throw new Error("the call succeeded");
}

describe("client: the same answers through grpc-js and connect-node", () => {
  const s = useServer(["--metrics-listen", "off"]);
  const clients = new Map<Transport, FencekeeperClient>();
  beforeEach(() => {
    for (const t of TRANSPORTS) clients.set(t, new FencekeeperClient({ servers: s.server.url, transport: t, callTimeoutMs: 5_000 }));
  });
  afterEach(async () => {
    for (const c of clients.values()) await c.close();
  });

  /** Runs the same failing call through each client, and expects one answer. */
  async function sameFailure(call: (c: FencekeeperClient, t: Transport) => Promise<unknown>) {
    const [grpcJs, connect] = await Promise.all(TRANSPORTS.map((t) => failure(call(clients.get(t)!, t))));
    expect(grpcJs).to.deep.equal(connect);
    return grpcJs;
  }

  it("a stale token's write: StaleTokenError with its reason and metadata", async () => {
    const resource = uniqueResource("transports-stale");
    const c = clients.get("grpc-js")!;
    const old = await c.acquire(resource, { ttl: 10_000 });
    await old.release();
    const now = await c.acquire(resource, { ttl: 10_000 });
    await now.put("k", "v");
    const e = await sameFailure((c) => c.store.put(old.token, "k", "stale"));
    expect(e.class).to.equal("StaleTokenError");
    expect(e.reason).to.equal("STALE_TOKEN");
  });

  it("bad input with a message in UTF-8 (a resource named in Greek): the same message, not percent-encoded", async () => {
    const e = await sameFailure((c) => c.acquire(`κλειδαριά-${"x".repeat(2000)}`, { ttl: 10_000 }));
    expect(e.class).to.equal("InvalidArgumentError");
    expect(e.message).to.not.match(/%[0-9A-F]{2}/);
    const d = await sameFailure((c) => c.acquire(uniqueResource("transports-delay"), { ttl: 5_000, lockDelay: 61_000 }));
    expect(d.message).to.match(/lock_delay 61s is above the maximum; allowed: /);
  });

  it("a resource held, without wait: ResourceHeldError naming the holder's token", async () => {
    const resource = uniqueResource("transports-held");
    const held = await clients.get("connect")!.acquire(resource, { ttl: 10_000 });
    const [a, b] = await Promise.all(TRANSPORTS.map((t) => clients.get(t)!.acquire(resource, { ttl: 10_000 }).catch((err) => err)));
    expect(seen(a)).to.deep.equal(seen(b));
    expect(seen(a).class).to.equal("ResourceHeldError");
    expect(a.holderToken.generation).to.equal(held.token.generation).and.to.equal(b.holderToken.generation);
  });

  it("a call given up by its signal: CanceledError; a waiting acquire past its deadline: TimeoutError", async () => {
    const resource = uniqueResource("transports-cancel");
    await clients.get("connect")!.acquire(resource, { ttl: 10_000 });
    const cancelled = await sameFailure((c) => c.acquire(resource, { ttl: 10_000, wait: true, signal: AbortSignal.timeout(300) }));
    expect(cancelled.class).to.equal("CanceledError");
    const late = await sameFailure((c) => c.acquire(resource, { ttl: 10_000, wait: 300 }));
    expect(late.class).to.be.oneOf(["TimeoutError", "ResourceHeldError"]);
  });

  it("a server that is not there: UnavailableError at once, through either", async () => {
    const port = await freePort();
    const errors = await Promise.all(
      TRANSPORTS.map(async (transport) => {
        const c = new FencekeeperClient({ servers: `http://127.0.0.1:${port}`, transport, callTimeoutMs: 5_000 });
        const t0 = Date.now();
        try {
          return { ...(await failure(c.acquire(uniqueResource("transports-gone"), { ttl: 10_000 }))), ms: Date.now() - t0 };
        } finally {
          await c.close();
        }
      }),
    );
    for (const e of errors) {
      expect(e.class).to.equal("UnavailableError");
      expect(e.ms, "refused at once, not at the deadline").to.be.lessThan(4_000);
    }
  });
});
