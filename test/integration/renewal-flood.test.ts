// The server's keepalive stream to etcd under a flood of renewals from one caller, far more than etcd
// answers: the flooder's renewals wait their turn and time out in its own queue, the stream is never
// given up for everyone, and a bystander with a short TTL, renewing every 400 ms, keeps its lease.
// Driven on the server's etcd layer (server/etcd/leases.ts) with a real etcd: what is under test is the
// stream to etcd, and a flood this large through the API would measure the API's reading instead
// (server/api/keepalive.ts reads a flooding stream more slowly). And one lease named thousands of times
// at once: etcd renews it once per round trip, never with many renewals of it on the stream at a time.
// And the order of etcd's answers: a bystander's renewal has at most OWNER_WINDOW of a flooder's ahead.
import { expect } from "chai";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { sleep } from "../harness/suite.js";
import { connectEtcd } from "../../server/etcd/client.js";
import { EtcdCalls } from "../../server/etcd/calls.js";
import { Leases, OWNER_WINDOW } from "../../server/etcd/leases.js";

const RENEW_TIMEOUT_MS = 1_500;
const FLOOD_MS = 8_000;
/** The bystander's lease: a short TTL (the shortest the server grants is 2 s). */
const TTL_SECONDS = 3;
/**
 * Renewals of distinct leases the flooder keeps asked for and unanswered, as a few KeepAlive streams at
 * the API's bound would: many times what etcd answers within the renewal timeout.
 */
const FLOOD_OUTSTANDING = 50_000;
/** Most renewals it asks for at once, so that the test's own event loop keeps turning. */
const FLOOD_STEP = 2_000;

describe("a flood of renewals on the keepalive stream to etcd", function () {
  this.timeout(90_000);
  let etcd: TestEtcd;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.destroy();
  });

  it("a bystander with a 3 s TTL keeps its lease; the flooder's renewals fail alone, the stream is never given up", async () => {
    const client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: RENEW_TIMEOUT_MS });
    const leases = new Leases(client, new EtcdCalls(), RENEW_TIMEOUT_MS);
    try {
      const { id } = await leases.grant(TTL_SECONDS);
      const flood = { asked: 0, renewed: 0, failures: new Map<string, number>() };
      let flooding = true;
      const flooder = (async () => {
        // Leases that do not exist cost etcd a renewal each, like live ones.
        let outstanding = 0;
        for (let next = 1_000_000_000n; flooding; await sleep(50)) {
          for (let n = Math.min(FLOOD_STEP, FLOOD_OUTSTANDING - outstanding); n > 0; n--) {
            flood.asked++;
            outstanding++;
            leases.renew(next++, "flooder").then(
              () => {
                outstanding--;
                flood.renewed++;
              },
              (e: Error) => {
                outstanding--;
                const why = e.message.replace(/\d+ ms/, "N ms");
                flood.failures.set(why, (flood.failures.get(why) ?? 0) + 1);
              },
            );
          }
        }
      })();

      // The bystander renews every 400 ms, not waiting for an answer first, as a holder's KeepAlive does.
      const attempts: { sentAt: number; doneAt: number; outcome: string }[] = [];
      const pending: Promise<void>[] = [];
      const started = performance.now();
      while (performance.now() - started < FLOOD_MS) {
        const a = { sentAt: performance.now() - started, doneAt: 0, outcome: "" };
        attempts.push(a);
        pending.push(
          leases.renew(id, "bystander").then(
            (ttl) => {
              a.doneAt = performance.now() - started;
              a.outcome = ttl > 0 ? "ok" : "the lease is gone";
            },
            (e: Error) => {
              a.doneAt = performance.now() - started;
              a.outcome = e.message;
            },
          ),
        );
        await sleep(400);
      }
      await Promise.all(pending);
      const ttlLeft = await leases.timeToLive(id);
      flooding = false;
      await flooder;
      await sleep(2 * RENEW_TIMEOUT_MS);
      const ok = attempts.filter((a) => a.outcome === "ok");
      const slowest = Math.max(...attempts.map((a) => a.doneAt - a.sentAt));
      const report = attempts.map((a) => `sent ${(a.sentAt / 1000).toFixed(1)} s, answered after ${(a.doneAt - a.sentAt).toFixed(0)} ms: ${a.outcome}`).join("\n");
      const summary =
        `flood: ${flood.asked} asked, ${flood.renewed} answered, failures ${JSON.stringify([...flood.failures])}; ` +
        `bystander: ${ok.length} of ${attempts.length} renewed, slowest answer ${slowest.toFixed(0)} ms`;
      console.log(`      ${summary}`);

      // The bystander keeps its lease: etcd never finds it gone, and no TTL passes without a renewal that
      // went through (each counts from its send).
      expect(attempts.filter((a) => a.outcome === "the lease is gone").length, `${summary}\n${report}`).to.equal(0);
      const sends = [0, ...ok.map((a) => a.sentAt), FLOOD_MS];
      const longestGap = Math.max(...sends.slice(1).map((t, i) => t - sends[i]));
      expect(longestGap, `the longest time without a renewal that went through\n${summary}\n${report}`).to.be.below(TTL_SECONDS * 1000);
      expect(ttlLeft, "the bystander's lease's TTL left at the end").to.be.greaterThan(0);
      // Most of its renewals go through on time, whatever the flood (a loaded machine may delay a few).
      expect(ok.length, `${summary}\n${report}`).to.be.at.least(attempts.length * 0.8);
      // The flooder's renewals fail one by one at their own timeout, never all at once with the stream.
      expect([...flood.failures.keys()].filter((why) => !why.includes("lease renew: no answer within")), summary).to.deep.equal([]);
    } finally {
      leases.close();
      client.close();
    }
  });

  it("one lease named 2,000 times a tick for 40 ticks: at most one of its renewals on the stream at a time, every asker answered", async () => {
    const client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: RENEW_TIMEOUT_MS });
    const leases = new Leases(client, new EtcdCalls(), RENEW_TIMEOUT_MS);
    /** Renewals etcd's leader carried out, from its own counter. */
    const renewedByEtcd = async () => Number(/^etcd_debugging_lease_renewed_total (\d+)/m.exec(await (await fetch(`${etcd.endpoint}/metrics`)).text())![1]);
    const TICKS = 40;
    const PER_TICK = 2_000;
    try {
      const { id } = await leases.grant(10);
      const before = await renewedByEtcd();
      const answers: Promise<number>[] = [];
      for (let t = 0; t < TICKS; t++) {
        for (let i = 0; i < PER_TICK; i++) answers.push(leases.renew(id, "flooder"));
        await sleep(10);
      }
      const ttls = await Promise.all(answers);
      const renewed = (await renewedByEtcd()) - before;
      console.log(`      ${TICKS * PER_TICK} renewals asked of one lease, ${renewed} carried out by etcd`);
      expect(ttls.filter((ttl) => ttl <= 0).length, "askers told the lease is gone").to.equal(0);
      // Per tick, the first ask is sent (or held behind the one on the stream) and the rest join the one
      // held: at most two renewals a tick. Before, each ask was sent while the window had room (256 a tick).
      expect(renewed).to.be.at.most(2 * TICKS).and.at.least(1);
    } finally {
      leases.close();
      client.close();
    }
  });

  it(`a bystander's renewal asked after 5,000 of a flooder's is sent with at most ${OWNER_WINDOW} of them ahead of it on the stream`, async () => {
    const client = connectEtcd({ endpoints: [etcd.endpoint], callTimeoutMs: RENEW_TIMEOUT_MS });
    const leases = new Leases(client, new EtcdCalls(), 10_000);
    try {
      const { id } = await leases.grant(10);
      await leases.renew(id, "bystander"); // the stream to etcd is open
      const order: string[] = [];
      const flood = Array.from({ length: 5_000 }, (_, i) => leases.renew(2_000_000_000n + BigInt(i), "flooder").then(() => order.push("flooder")));
      const bystander = leases.renew(id, "bystander").then((ttl) => {
        expect(ttl).to.be.greaterThan(0);
        order.push("bystander");
      });
      await Promise.all([...flood, bystander]);
      const at = order.indexOf("bystander");
      console.log(`      the bystander's renewal answered ${at + 1}th of ${order.length}`);
      // etcd answers a stream's renewals in the order sent: the flooder's already on it, then the bystander's.
      expect(at).to.be.at.most(OWNER_WINDOW);
    } finally {
      leases.close();
      client.close();
    }
  });
});
