// A watch of etcd (server/etcd/reader.ts), as Observe and the Acquire waits read it, against a real etcd:
// the changes in order, an end when it is closed or its call's signal is aborted, and a failure, after
// what came before it, when etcd cancels it.
import { expect } from "chai";
import { randomBytes } from "node:crypto";
import { Etcd3, type IWatchResponse } from "etcd3";
import { DomainError } from "../../server/errors/errors.js";
import { EtcdCalls } from "../../server/etcd/calls.js";
import { Reader, type Watch } from "../../server/etcd/reader.js";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";

/** The keys a watch reports, as they come, until it ends; and how it ended. */
function keysOf(watch: Watch): { keys: string[]; ended: Promise<unknown> } {
  const keys: string[] = [];
  const ended = (async () => {
    for await (const res of watch as AsyncIterable<IWatchResponse>) for (const e of res.events) keys.push(e.kv.key.toString());
  })().then(
    () => "ended",
    (err: unknown) => err,
  );
  return { keys, ended };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a watch of etcd", () => {
  let etcd: TestEtcd;
  let client: Etcd3;
  let reader: Reader;
  let prefix: string;

  before(async function () {
    etcd = await startEtcd();
    client = new Etcd3({ hosts: etcd.endpoint });
    reader = new Reader(client, new EtcdCalls());
  });
  after(async function () {
    client?.close();
    await etcd?.destroy();
  });
  beforeEach(() => {
    prefix = `/watch-${randomBytes(4).toString("hex")}/`;
  });

  const put = async (key: string) => BigInt((await client.put(prefix + key).value("v").exec()).header.revision);
  const range = () => ({ key: Buffer.from(prefix), rangeEnd: Buffer.from(prefix.slice(0, -1) + "0") });

  it("reports the changes from the revision asked for, in order, and ends once closed", async () => {
    const from = await put("a");
    await put("b");
    const watch = await reader.watch("test", { ...range(), fromRevision: from }, new AbortController().signal);
    const seen = keysOf(watch);
    await put("c");
    await until("three changes", () => seen.keys.length === 3);
    await watch.close();
    expect(await seen.ended).to.equal("ended");
    expect(seen.keys).to.deep.equal([prefix + "a", prefix + "b", prefix + "c"]);
  });

  it("ends when its call's signal is aborted, and refuses to start on an aborted one", async () => {
    const call = new AbortController();
    const watch = await reader.watch("test", { ...range(), fromRevision: await put("a") }, call.signal);
    const seen = keysOf(watch);
    await until("the first change", () => seen.keys.length === 1);
    call.abort(new DomainError("cancelled", "the client cancelled the call"));
    expect(await seen.ended).to.equal("ended");
    await watch.close();

    let refused: unknown;
    await reader.watch("test", { ...range(), fromRevision: 1n }, call.signal).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(DomainError);
    expect((refused as DomainError).kind).to.equal("cancelled");
  });

  it("fails, with etcd's error classified, when etcd cancels it (a revision compacted away), and still closes", async () => {
    const from = await put("a");
    const last = await put("b");
    await client.kv.compact({ revision: last.toString(), physical: true });
    // etcd creates the watcher and then cancels it; or refuses it at once, and watch() fails (closing it).
    let outcome: unknown;
    let closing = "closed";
    try {
      const watch = await reader.watch("test", { ...range(), fromRevision: from }, new AbortController().signal);
      const seen = keysOf(watch);
      outcome = await seen.ended;
      expect(seen.keys).to.deep.equal([]);
      // Its users close it on every path out (finally): that must not wait for etcd, which has let it go.
      closing = await Promise.race([watch.close().then(() => "closed"), new Promise<string>((resolve) => setTimeout(() => resolve("still closing after 20 s"), 20_000))]);
    } catch (err) {
      outcome = err;
    }
    expect(outcome).to.be.instanceOf(DomainError);
    expect(closing).to.equal("closed");
  });
});
