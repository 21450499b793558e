// `npm run demo`, run as a user runs it: the article's timeline ends with the stale write refused and exit 0;
// a timeline that goes otherwise (A resumed before its lease expired) ends with exit 1. Either way the
// throwaway server and its folder are gone afterwards.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect } from "chai";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

async function demo(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn("npm", ["run", "--silent", "demo", "--", ...args], { cwd: ROOT, env: { ...process.env, FENCEKEEPER_URL: "" } });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  return { code, out };
}

const folderOf = (out: string) => /etcd in (\S+)\)/.exec(out)?.[1];

describe("demo: npm run demo", () => {
  it("plays the timeline: A paused past its TTL, B writes, A's write is refused STALE_TOKEN; exit 0", async () => {
    const { code, out } = await demo([]);
    expect(code, out).to.equal(0);
    expect(out).to.match(/A +acquired "[^"]+": token (\d+)/);
    expect(out).to.match(/A +is paused \(SIGSTOP\)/);
    expect(out).to.match(/B +acquired: token \d+/);
    expect(out).to.match(/A +SDK: lease signal aborted \(deadline\)/);
    expect(out).to.match(/A +write "doc" with token \d+ anyway: REFUSED FailedPrecondition STALE_TOKEN \(fence \d+\)/);
    expect(out).to.match(/store "doc" = "written by B"/);
    expect(out).to.match(/^OK: /m);
    const folder = folderOf(out);
    expect(folder).to.be.a("string");
    expect(existsSync(folder!), "the demo's folder is removed").to.equal(false);
  });

  it("exits 1 when the timeline goes otherwise: A resumed before its lease expired, so B never gets it", async () => {
    const { code, out } = await demo(["--pause", "300"]);
    expect(code, out).to.equal(1);
    expect(out).to.match(/^FAILED: B did not get the resource/m);
    expect(out).to.not.match(/^OK: /m);
    expect(existsSync(folderOf(out)!), "the demo's folder is removed").to.equal(false);
  });
});
