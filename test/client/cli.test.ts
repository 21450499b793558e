// The fencekeeper command, run as a user runs it (bin/fencekeeper.js, the compiled CLI): its output for
// people and with --json, its exit codes, and one line on stderr for every error.
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { FencekeeperClient, formatToken, tokenToJson, type Lease, type Token } from "../../client/index.js";
import { ensureBuilt } from "../harness/build.js";
import { eventually, sleep, uniqueResource, useServer } from "../harness/suite.js";

/** A token as a caller that is not its principal reads it (docs/verifying-tokens.md): no key id, no signature. */
const shownToOthers = ({ keyId: _k, signature: _s, ...t }: Token): Token => t;

const CLI = fileURLToPath(new URL("../../bin/fencekeeper.js", import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout's JSON lines. */
  json: Record<string, any>[];
}

function start(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], { env: { ...process.env, FENCEKEEPER_URL: "", FENCEKEEPER_TOKEN: "", ...env }, stdio: "pipe" });
}

async function finish(child: ChildProcess, input?: string): Promise<Run> {
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => (stdout += d));
  child.stderr!.on("data", (d) => (stderr += d));
  child.stdin!.end(input);
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  const json = stdout.startsWith("{") ? stdout.trim().split("\n").map((l) => JSON.parse(l)) : [];
  return { code, stdout, stderr, json };
}

const run = (args: string[], o: { env?: Record<string, string>; input?: string } = {}) => finish(start(args, o.env), o.input);

/** The first JSON line a long-running command prints. */
function firstLine(child: ChildProcess): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once("line", (l) => {
      lines.close();
      resolve(JSON.parse(l));
    });
    child.once("exit", (code) => reject(new Error(`exited with ${code} before printing`)));
  });
}

function expectOneLineError(r: Run, pattern: RegExp): void {
  const lines = r.stderr.trimEnd().split("\n");
  expect(lines, r.stderr).to.have.length(1);
  expect(lines[0]).to.match(/^fencekeeper: /);
  expect(lines[0]).to.match(pattern);
}

describe("cli: the fencekeeper command", () => {
  before(async function () {
    this.timeout(300_000);
    await ensureBuilt();
  });
  const s = useServer(["--metrics-listen", "off"]);
  const server = () => ["--server", s.server.url];
  let fk: FencekeeperClient;
  beforeEach(() => (fk = new FencekeeperClient({ servers: s.server.url })));
  afterEach(() => fk.close());

  it("acquire prints the token, holds the lease, and Ctrl-C releases it (exit 0)", async () => {
    const resource = uniqueResource("cli-acquire");
    const child = start([...server(), "--json", "acquire", resource, "--ttl", "2s", "--holder", "cli"]);
    const acquired = await firstLine(child);
    expect(acquired.event).to.equal("acquired");
    expect(acquired.token.resource).to.equal(resource);
    expect(acquired.tokenText).to.equal(`${resource}:${acquired.token.generation}:${acquired.token.leaseId}`);
    await sleep(2500); // past the TTL: kept alive by renewals
    const held = await fk.describe(resource);
    expect(held).to.deep.include({ held: true, holder: "cli" });
    expect(String(held.token!.generation)).to.equal(acquired.token.generation);
    child.kill("SIGINT");
    const r = await finish(child);
    expect(r.code).to.equal(0);
    expect(r.json.at(-1)).to.deep.include({ event: "released" });
    expect((await fk.describe(resource)).held).to.equal(false);
  });

  it("acquire --shared holds beside another shared holder; describe lists both; Ctrl-C releases each", async () => {
    const resource = uniqueResource("cli-shared");
    const children = ["r1", "r2"].map((holder) => start([...server(), "--json", "acquire", resource, "--shared", "--holder", holder]));
    const acquired = await Promise.all(children.map(firstLine));
    expect(acquired.map((a) => a.token.shared)).to.deep.equal([true, true]);
    const d = await run([...server(), "--json", "describe", resource]);
    expect(d.json[0].held).to.equal(true);
    expect(d.json[0].holders.map((h: { holder: string }) => h.holder).sort()).to.deep.equal(["r1", "r2"]);
    for (const child of children) child.kill("SIGINT");
    const ends = await Promise.all(children.map((c) => finish(c)));
    expect(ends.map((r) => r.code)).to.deep.equal([0, 0]);
    expect((await fk.describe(resource)).held).to.equal(false);
  });

  it("acquire --max-holders 2 --wait: two processes hold, a third waits until one is interrupted", async function () {
    this.timeout(60_000);
    const resource = uniqueResource("cli-semaphore");
    const sem = (holder: string) => start([...server(), "--json", "acquire", resource, "--max-holders", "2", "--wait", "--holder", holder]);
    const [p1, p2] = [sem("p1"), sem("p2")];
    const acquired = await Promise.all([p1, p2].map(firstLine));
    expect(acquired.map((a) => a.token.shared)).to.deep.equal([true, true]);
    const p3 = sem("p3");
    await eventually(async () => (await fk.describe(resource)).waiters === 1, "p3 waits");
    const d = await run([...server(), "--json", "describe", resource]);
    expect(d.json[0].maxHolders).to.equal(2);
    p1.kill("SIGINT");
    expect((await finish(p1)).code).to.equal(0);
    expect((await firstLine(p3)).token.shared).to.equal(true);
    expect((await fk.describe(resource)).holders.map((h) => h.holder).sort()).to.deep.equal(["p2", "p3"]);
    for (const child of [p2, p3]) child.kill("SIGINT");
    expect((await Promise.all([p2, p3].map((c) => finish(c)))).map((r) => r.code)).to.deep.equal([0, 0]);
    expect((await fk.describe(resource)).held).to.equal(false);
  });

  it("acquire exits 3 with a one-line message when its lease is lost (the process paused past its TTL)", async () => {
    const resource = uniqueResource("cli-lost");
    const child = start([...server(), "--json", "acquire", resource, "--ttl", "2s"]);
    await firstLine(child);
    child.kill("SIGSTOP");
    await sleep(3500);
    child.kill("SIGCONT");
    const r = await finish(child);
    expect(r.code).to.equal(3);
    expect(r.json.at(-1)!.error).to.include({ code: "LEASE_LOST", why: "deadline" });
    expectOneLineError(r, /is lost: no renewal was confirmed before its deadline/);
  });

  it("acquire --preempt takes the resource from a holding acquire, which exits 3 saying it was preempted", async () => {
    const resource = uniqueResource("cli-preempt");
    const holder = start([...server(), "--json", "acquire", resource, "--ttl", "3s", "--holder", "old"]);
    const held = await firstLine(holder);
    const preemptor = start([...server(), "--json", "acquire", resource, "--ttl", "10s", "--holder", "new", "--preempt"]);
    const taken = await firstLine(preemptor);
    expect(BigInt(taken.token.generation) > BigInt(held.token.generation)).to.equal(true);
    const r = await finish(holder);
    expect(r.code).to.equal(3);
    expect(r.json.at(-1)!.error).to.include({ code: "LEASE_LOST", why: "preempted" });
    expectOneLineError(r, /was preempted \(now generation \d+\)/);
    expect((await fk.describe(resource)).holder).to.equal("new");
    preemptor.kill("SIGINT");
    expect((await finish(preemptor)).code).to.equal(0);
  });

  describe("the store, with a token from a lease", () => {
    let resource: string;
    let lease: Lease;
    beforeEach(async () => {
      resource = uniqueResource("cli-store");
      lease = await fk.acquire(resource, { ttl: 10_000 });
    });
    afterEach(() => lease.release());

    it("put, get, ls, delete, fence and describe, with --json", async () => {
      const text = formatToken(lease.token);
      const gen = String(lease.token.generation);
      const put = await run([...server(), "--json", "put", resource, "a/1", "one", "--token", text]);
      expect(put.code).to.equal(0);
      expect(put.json).to.have.length(1);
      expect(put.json[0]).to.deep.include({ fence: gen, replayed: false });
      // The JSON token from FENCEKEEPER_TOKEN, the value from stdin.
      const piped = await run([...server(), "--json", "put", resource, "a/2"], { env: { FENCEKEEPER_TOKEN: JSON.stringify(tokenToJson(lease.token)) }, input: "two" });
      expect(piped.code).to.equal(0);
      const [get, ls, keys, fence, describe] = await Promise.all([
        run([...server(), "--json", "get", resource, "a/2"]),
        run([...server(), "--json", "ls", resource, "a/"]),
        run([...server(), "--json", "ls", resource, "--keys-only"]),
        run([...server(), "--json", "fence", resource]),
        run([...server(), "--json", "describe", resource]),
      ]);
      expect(get.json[0]).to.deep.include({ found: true, key: "a/2", value: "two", fence: gen });
      expect(ls.json.map((e) => [e.key, e.value])).to.deep.equal([["a/1", "one"], ["a/2", "two"]]);
      expect(keys.json.map((e) => e.key)).to.deep.equal(["a/1", "a/2"]);
      expect(keys.json[0]).to.not.have.property("value");
      expect(fence.json[0]).to.deep.include({ resource, fence: gen, lastIssued: gen });
      expect(describe.json[0]).to.deep.include({ resource, held: true, waiters: 0, fence: gen });
      // Without authentication nobody is the token's principal: Describe shows it without its signature.
      expect(describe.json[0].token).to.deep.equal(tokenToJson(shownToOthers(lease.token)));

      const del = await run([...server(), "--json", "delete", resource, "a/1", "--token", text]);
      expect(del.code).to.equal(0);
      const gone = await run([...server(), "--json", "get", resource, "a/1"]);
      expect(gone.code).to.equal(4);
      expect(gone.json[0]).to.deep.include({ found: false });
    });

    it("prints for people without --json", async () => {
      const text = formatToken(lease.token);
      expect((await run([...server(), "put", resource, "k", "hello", "--token", text])).stdout).to.match(/^put "k" at revision \d+; fence \d+\n$/);
      const [get, describe, ls] = await Promise.all([
        run([...server(), "get", resource, "k"]),
        run([...server(), "describe", resource]),
        run([...server(), "ls", resource]),
      ]);
      expect(get.stdout).to.equal("hello");
      expect(describe.stdout).to.include(`is held by`).and.include(`with token ${text}`);
      expect(ls.stdout).to.equal("k\thello\n");
    });

    it("a stale token is refused: exit 5, STALE_TOKEN with the fence, one line on stderr", async () => {
      const stale = formatToken(lease.token);
      await lease.release();
      const newer = await fk.acquire(resource, { ttl: 10_000 });
      await newer.put("k", "newer");
      const r = await run([...server(), "--json", "put", resource, "k", "stale", "--token", stale]);
      expect(r.code).to.equal(5);
      expect(r.json[0].error).to.deep.include({ code: "FAILED_PRECONDITION", reason: "STALE_TOKEN" });
      expect(r.json[0].error.metadata).to.include({ fence: String(newer.token.generation) });
      expectOneLineError(r, /older than the fence .*\(FAILED_PRECONDITION STALE_TOKEN\)$/);
      lease = newer;
    });
  });

  it("exit codes: held 6, gave up waiting 7, no server 8, bad input 2, no key 4; each error one line", async () => {
    const resource = uniqueResource("cli-codes");
    const lease = await fk.acquire(resource, { ttl: 10_000 });
    try {
      const [held, waited, down, badToken, badOption, otherResource, missing] = await Promise.all([
        run([...server(), "--json", "acquire", resource]),
        run([...server(), "acquire", resource, "--wait", "500ms"]),
        run(["--server", "http://127.0.0.1:1", "fence", resource]),
        run([...server(), "put", resource, "k", "v", "--token", "nonsense"]),
        run([...server(), "describe", resource, "--colour"]),
        run([...server(), "put", "elsewhere", "k", "v", "--token", formatToken(lease.token)]),
        run([...server(), "get", resource, "missing"]),
      ]);
      expect(held.code).to.equal(6);
      expect(held.json[0].error).to.deep.include({ code: "ABORTED", reason: "RESOURCE_HELD" });
      expectOneLineError(held, /is held by/);
      expect(waited.code).to.equal(7);
      expectOneLineError(waited, /DEADLINE_EXCEEDED/);
      expect(down.code).to.equal(8);
      expectOneLineError(down, /UNAVAILABLE/);
      expect(badToken.code).to.equal(2);
      expectOneLineError(badToken, /resource:generation:leaseId/);
      expect(badOption.code).to.equal(2);
      expectOneLineError(badOption, /unknown option '--colour'/);
      expect(otherResource.code).to.equal(2);
      expectOneLineError(otherResource, /the token is for/);
      expect(missing.code).to.equal(4);
      expectOneLineError(missing, /no key "missing"/);
    } finally {
      await lease.release();
    }
  });

  it("acquire --lock-delay sets a lock-delay (describe shows it); one above the server's maximum is bad input (exit 2)", async () => {
    const resource = uniqueResource("cli-lock-delay");
    const child = start([...server(), "--json", "acquire", resource, "--ttl", "5s", "--lock-delay", "2s"]);
    await firstLine(child);
    const described = await run([...server(), "--json", "describe", resource]);
    expect(described.json[0]).to.deep.include({ held: true, lockDelayMs: 2000 });
    child.kill("SIGINT");
    expect((await finish(child)).code).to.equal(0);
    const tooLong = await run([...server(), "acquire", resource, "--lock-delay", "61s"]);
    expect(tooLong.code).to.equal(2);
    expectOneLineError(tooLong, /lock_delay 61s is above the maximum; allowed: 0s \(none\) to 60s/);
  });

  it("shows a name's bidi controls and line separators as escapes for people, and as they are with --json", async () => {
    // U+202E would show the name reversed from there on; U+2028 would break the line in two.
    const resource = `${uniqueResource("cli-bidi")}/invoice\u202Efdp.exe\u2028next`;
    const lease = await fk.acquire(resource, { ttl: 10_000, holder: "ops\u2066team" });
    try {
      const [human, json] = await Promise.all([run([...server(), "describe", resource]), run([...server(), "--json", "describe", resource])]);
      expect(human.stdout).to.include(`"${resource.replace("\u202E", "\\u202E").replace("\u2028", "\\u2028")}" is held by "ops\\u2066team"`);
      expect(human.stdout).to.not.match(/[\u202e\u2028\u2066]/);
      expect(json.json[0]).to.include({ resource, holder: "ops\u2066team" });
      const refused = await run([...server(), "acquire", resource, "--ttl", "2s"]);
      expect(refused.code).to.equal(6);
      expectOneLineError(refused, /\\u202Efdp\.exe\\u2028next/);
    } finally {
      await lease.release();
    }
  });

  it("observe prints the holder now and each handover, until Ctrl-C", async () => {
    const resource = uniqueResource("cli-observe");
    const child = start([...server(), "--json", "observe", resource]);
    const lines: Record<string, any>[] = [];
    createInterface({ input: child.stdout! }).on("line", (l) => lines.push(JSON.parse(l)));
    const until = async (n: number) => {
      for (let i = 0; i < 100 && lines.length < n; i++) await sleep(50);
      expect(lines.length, JSON.stringify(lines)).to.be.at.least(n);
    };
    await until(1);
    expect(lines[0]).to.include({ resource, held: false });
    const lease = await fk.acquire(resource, { ttl: 5000, holder: "watched" });
    await until(2);
    expect(lines[1]).to.deep.include({ held: true, holder: "watched", token: tokenToJson(shownToOthers(lease.token)) });
    await lease.release();
    await until(3);
    expect(lines[2]).to.include({ held: false });
    expect(BigInt(lines[2].revision) > BigInt(lines[1].revision)).to.equal(true);
    child.kill("SIGINT");
    const r = await finish(child);
    expect(r.code).to.equal(0);
  });
});
