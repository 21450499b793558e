// The etcd-quota nemesis on its own (quota.ts): a 3-member etcd with a small --quota-backend-bytes
// filled through a side prefix until it raises NOSPACE; a holder's write meanwhile is refused
// RESOURCE_EXHAUSTED (ETCD_NO_SPACE), and one sent once the alarm is raised leaves nothing written (one in
// flight as etcd filled may have been applied: etcd applies what it takes as it crosses its quota and
// answers NOSPACE all the same); after the heal (filler deleted, compacted, defragmented, alarm
// disarmed) writes work again within a few seconds, and the history the checker reads is whole across
// the compaction.
import { Code, ConnectError } from "@connectrpc/connect";
import { expect } from "chai";
import { ErrorInfoSchema } from "../../gen/ts/google/rpc/error_details_pb.js";
import { Etcd3 } from "etcd3";
import { FenceMode } from "../../gen/ts/fencekeeper/v1/token_pb.js";
import { clientsFor } from "../harness/clients.js";
import { EtcdCluster } from "./etcd-cluster.js";
import { HistoryLog, readHistory } from "./etcd-history.js";
import { alarms, fillToQuota, QUOTA_BYTES } from "./quota.js";
import { Replica } from "./replicas.js";

const PREFIX = "/fk-quota/";
const ttl = { seconds: 60n, nanos: 0 };

describe("faults: etcd filled to its quota, then healed", function () {
  this.timeout(120_000);
  let cluster: EtcdCluster | undefined;
  let replica: Replica | undefined;

  before(async () => {
    cluster = await EtcdCluster.start(3, undefined, QUOTA_BYTES);
    replica = await Replica.start("r0", cluster.endpoints, PREFIX);
  });

  after(async () => {
    await replica?.kill();
    await cluster?.destroy();
  });

  it("refuses writes ETCD_NO_SPACE while full, writes nothing of those sent once the alarm is raised, and takes writes again within a few seconds of the heal", async () => {
    const c = clientsFor(replica!.url);
    const resource = "q";
    const { token } = await c.lease.acquire({ resource, ttl, holder: "h" });
    const put = (value: string) => c.store.put({ resource, key: "k", value: Buffer.from(value), mutation: { token, mode: FenceMode.LIVE } }, { timeoutMs: 8_000 });
    const before = await put("before");
    const log = new HistoryLog();
    let healed = 0;
    const nemesis = fillToQuota(cluster!, PREFIX, log, 5_000).then((what) => {
      healed = Date.now();
      return what;
    });
    // While etcd fills: a write refused for etcd's space, with its reason. It may be one that etcd
    // applied as it crossed its quota, so its outcome is not known.
    let refused: ConnectError | undefined;
    for (let i = 0; i < 100 && !refused && healed === 0; i++) {
      try {
        await put(`during-${i}`);
        await new Promise((r) => setTimeout(r, 100));
      } catch (e) {
        refused = ConnectError.from(e);
      }
    }
    expect(refused, "a write refused while etcd was full").to.not.equal(undefined);
    expect(Code[refused!.code]).to.equal("ResourceExhausted");
    expect(refused!.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("ETCD_NO_SPACE");
    expect(refused!.message).to.match(/alarm disarm/).and.match(/may have been applied/);
    // Once etcd lists the alarm (through raft), a write sent after it is applied after the alarm: refused, and nothing written.
    const etcd = new Etcd3({ hosts: cluster!.endpoints });
    try {
      while ((await alarms(etcd)).length === 0) await new Promise((r) => setTimeout(r, 50));
    } finally {
      etcd.close();
    }
    const refusedValue = "after-the-alarm";
    const late = await put(refusedValue).then(
      () => undefined,
      (e) => ConnectError.from(e),
    );
    expect(healed, "the heal began only after the hold").to.equal(0);
    expect(late && Code[late.code], "a write sent once the alarm was raised").to.equal("ResourceExhausted");
    expect(late!.findDetails(ErrorInfoSchema)[0]?.reason).to.equal("ETCD_NO_SPACE");
    const what = await nemesis;
    // Writes work again within a few seconds of the heal.
    let after: Awaited<ReturnType<typeof put>> | undefined;
    while (!after && Date.now() - healed < 5_000) after = await put("after").catch(() => undefined);
    expect(after, `a write within 5 s of the heal (${what})`).to.not.equal(undefined);
    console.log(`      ${what}; a write took ${Date.now() - healed} ms after the heal`);
    // The history across the compaction: the writes before and after, and none of the refused one's.
    const truth = await readHistory(cluster!.endpoints, PREFIX, 30_000, log);
    const values = truth.events.filter((e) => e.type === "put" && e.kv.key.toString().endsWith("/k")).map((e) => [e.kv.value.toString(), e.rev]);
    expect(values.map(([v]) => v)).to.include.members(["before", "after"]);
    expect(values.map(([v]) => v), "the refused write").to.not.include(refusedValue);
    expect(values.find(([v]) => v === "before")![1]).to.equal(BigInt(before.commit!.revision));
    expect(values.find(([v]) => v === "after")![1]).to.equal(BigInt(after!.commit!.revision));
  });
});
