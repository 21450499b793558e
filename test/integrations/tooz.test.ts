// tooz (OpenStack's coordination library) on fencekeeper: its real get_coordinator() finds the backend of
// sdk/python-tooz through the tooz.backends entry point (fencekeeper://HOST:PORT), in the venv that
// scripts/setup-polyglot.sh installs the backend's wheel and tooz into (.conformance/venv-tooz). Two
// coordinators, each a process (sdk/python-tooz/tests/probe.py), contend for a lock (get_lock) and for a
// group's leadership (watch_elected_as_leader + run_watchers): the holder paused (SIGSTOP) past its TTL
// loses to the other, its write under its old token is refused by the fenced store once it runs again, and
// a release hands over to the one waiting. And a tooz user's program (sdk/python-tooz/consumer-test/user.py)
// runs on the installed wheel.
import { expect } from "chai";
import { existsSync, readFileSync } from "node:fs";
import { startEtcd, type TestEtcd } from "../harness/etcd.js";
import { startServer, type TestServer } from "../harness/server.js";
import { ProbeProcess, ROOT, runToEnd, type ProbeEvent } from "../sdk/probe-process.js";

const PYTHON = `${ROOT}.conformance/venv-tooz/bin/python`;
const PROBE = `${ROOT}sdk/python-tooz/tests/probe.py`;
const USER = `${ROOT}sdk/python-tooz/consumer-test/user.py`;
const TTL_S = 2;
/** Bounds on waiting for an event; the verdicts are the events themselves. */
const WAIT_MS = 20_000;

/** Fails, with what to do, when setup-polyglot.sh has not installed the backend. */
function assertBuilt(): void {
  const missing = `${ROOT}.conformance/tooz.missing`;
  if (existsSync(missing)) throw new Error(`the tooz backend is not installed: ${readFileSync(missing, "utf8").trim()}`);
  if (!existsSync(`${ROOT}.conformance/tooz.stamp`) || !existsSync(PYTHON)) {
    throw new Error("the tooz backend is not installed: run bash scripts/setup-polyglot.sh (npm test runs it)");
  }
}

describe("tooz on fencekeeper (sdk/python-tooz)", function () {
  this.timeout(60_000);
  let etcd: TestEtcd | undefined;
  let server: TestServer | undefined;
  let url = "";
  const probes: ProbeProcess[] = [];

  before(async () => {
    assertBuilt();
    etcd = await startEtcd();
    server = await startServer({ etcd: etcd.endpoint, args: ["--metrics-listen", "off", "--shutdown-grace", "500"] });
    url = `fencekeeper://${new URL(server.url).host}?ttl=${TTL_S}`;
  });
  after(async () => {
    await server?.stop();
    await etcd?.destroy();
  });
  afterEach(async () => {
    await Promise.all(probes.splice(0).map((p) => p.kill()));
  });

  function start(mode: "lock" | "elect", member: string, name: string): ProbeProcess {
    const p = new ProbeProcess(`the tooz ${mode} probe ${member}`, PYTHON, [PROBE, mode, "--url", url, "--member", member, "--name", name, "--group", name]);
    probes.push(p);
    return p;
  }

  /** Ends a probe through its stdin (coordinator.stop()), then waits for its exit. */
  async function stop(p: ProbeProcess): Promise<void> {
    p.process.stdin!.end();
    await p.next("stopped", WAIT_MS);
    await p.kill();
  }

  it("installed the usual way (its wheel, with pip, in a fresh venv), a tooz user's program locks, writes under the lock's token and is elected", async () => {
    const r = await runToEnd(PYTHON, [USER, new URL(server!.url).host, "tooz-user"]);
    const output = r.stdout + r.stderr;
    expect(r.code, output).to.equal(0);
    expect(r.stdout).to.match(/^lock generation \d+ fence \d+$/m);
    expect(r.stdout).to.match(/^leader host-1 generation \d+$/m);
    expect(r.stdout).to.match(/^ok from .*\/\.conformance\/venv-tooz\/lib\/.*site-packages\/fencekeeper_tooz\/__init__\.py$/m);
  });

  for (const mode of ["lock", "elect"] as const) {
    const what = mode === "lock" ? "get_lock(): the lock" : "watch_elected_as_leader(): the leadership";
    it(`${what} of a coordinator paused past its TTL passes to the other; its write under the old token is refused; a release hands over`, async () => {
      const name = `tooz-${mode}`;
      const a = start(mode, "member-a", name);
      const aHeld = await a.next("held", WAIT_MS);
      expect(aHeld.resource).to.equal(`tooz/${mode === "lock" ? "locks" : "leaders"}/${name}`);
      const b = start(mode, "member-b", name);
      await b.next("ready", WAIT_MS);
      if (mode === "elect") expect((await a.command("leader", "leader")).member).to.equal("member-a");
      expect(b.seen("held"), "the second coordinator holds nothing while the first does").to.deep.equal([]);

      const pausedAt = Date.now();
      a.pause();
      const bHeld = await b.next("held", WAIT_MS);
      expect(BigInt(bHeld.generation) > BigInt(aHeld.generation), "the new holder's generation is newer").to.equal(true);
      expect((await b.command(`write ${name} from-b`, (e) => e.event === "written" || e.event === "refused")).event).to.equal("written");
      if (mode === "elect") expect((await b.command("leader", "leader")).member).to.equal("member-b");

      const resumedAt = a.events.length;
      a.resume();
      const lost: ProbeEvent = await a.next("lost", WAIT_MS, resumedAt);
      expect(lost.generation).to.equal(aHeld.generation);
      expect(["deadline", "not-found"]).to.include(lost.why);
      const stale = await a.command(`write ${name} from-a`, (e) => e.event === "written" || e.event === "refused");
      expect(stale.event, `the paused holder's write after it ran again:\n${a.timeline(pausedAt)}`).to.equal("refused");
      expect(["STALE_TOKEN", "LEASE_NOT_HELD"]).to.include(stale.reason);
      expect(stale.generation).to.equal(aHeld.generation);
      expect(a.events.slice(resumedAt).filter((e) => e.event === "held"), "nothing elects the paused one while the other holds").to.deep.equal([]);

      const released = await b.command("release", "released");
      expect(released.ok).to.equal(true);
      const aAgain = await a.next("held", WAIT_MS, resumedAt);
      expect(BigInt(aAgain.generation) > BigInt(bHeld.generation), "the handover's generation is newer").to.equal(true);
      expect((await a.command(`write ${name} from-a-again`, (e) => e.event === "written" || e.event === "refused")).event).to.equal("written");
      console.log(
        `      ${mode}: a held generation ${aHeld.generation}; paused; b held ${bHeld.generation} after ${bHeld.at - pausedAt} ms; ` +
          `a resumed: lost (${lost.why}), its write refused ${stale.reason}; b released; a held ${aAgain.generation}`,
      );
      await Promise.all([stop(a), stop(b)]);
    });
  }
});
