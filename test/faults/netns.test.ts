// The fault runs' network (netns.ts), on its own: nodes in namespaces of their own that reach each
// other and are reached from the harness's namespace; a cut that silently loses the packets between
// two nodes, both ways, and leaves their links to the harness; a shaped link; nothing left behind
// after a run, nor after a run killed with SIGKILL (the next run removes it).
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { Network } from "./netns.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const namespaces = () => execFileSync("ip", ["netns", "list"], { encoding: "utf8" });
const links = () => execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" });

/** Connects from the node's namespace (or the harness's) to a node's port 7000: its greeting, or why not. */
function probe(net: Network, from: string | undefined, to: string): string {
  const cmd = ["timeout", "2", "bash", "-c", `exec 3<>/dev/tcp/${net.addr(to)}/7000 && head -c 2 <&3`];
  try {
    return execFileSync(from ? "ip" : cmd[0], from ? ["netns", "exec", net.ns(from), ...cmd] : cmd.slice(1), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    return (e as { status?: number }).status === 124 ? "hangs" : `refused: ${(e as { stderr?: string }).stderr?.trim()}`;
  }
}

/** A server in the node's namespace that greets with the node's name. */
async function greeter(net: Network, node: string): Promise<ChildProcess> {
  const [program, ...args] = net.command(node);
  const code = `require("net").createServer((s) => s.end(${JSON.stringify(node)})).listen(7000, ${JSON.stringify(net.addr(node))}, () => console.log("up"))`;
  const child = spawn(program, [...args, process.execPath, "-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (c) => reject(new Error(`greeter in ${node} exited with ${c}`)));
  });
  return child;
}

describe("faults: the network namespaces", function () {
  this.timeout(60_000);
  let net: Network;
  const servers: ChildProcess[] = [];

  before(async () => {
    net = await Network.create(["a", "b", "c"]);
    for (const n of net.nodes) servers.push(await greeter(net, n));
  });

  after(async () => {
    for (const s of servers) s.kill("SIGKILL");
    await net?.destroy();
  });

  it("puts each node in a namespace of its own, on an address of the run's /24, reached from the harness and from each other", () => {
    expect(net.addr("a")).to.match(/^10\.\d+\.\d+\.1\d$/);
    for (const n of net.nodes) expect(namespaces()).to.contain(net.ns(n));
    for (const to of net.nodes) {
      expect(probe(net, undefined, to), `harness -> ${to}`).to.equal(to);
      for (const from of net.nodes) if (from !== to) expect(probe(net, from, to), `${from} -> ${to}`).to.equal(to);
    }
  });

  it("a partition silently drops the packets between its sides, both ways, and keeps every link to the harness", async () => {
    await net.partition([["a"], ["b", "c"]]);
    try {
      expect(probe(net, "a", "b")).to.equal("hangs");
      expect(probe(net, "b", "a")).to.equal("hangs");
      expect(probe(net, "c", "a")).to.equal("hangs");
      expect(probe(net, "b", "c")).to.equal("c");
      for (const n of net.nodes) expect(probe(net, undefined, n), `harness -> ${n}`).to.equal(n);
    } finally {
      await net.heal();
    }
    expect(probe(net, "a", "b")).to.equal("b");
    expect(probe(net, "c", "a")).to.equal("a");
  });

  it("a bridge: the middle node sees both sides, which do not see each other", async () => {
    await net.cut(["a", "c"]);
    try {
      expect(probe(net, "a", "c")).to.equal("hangs");
      expect(probe(net, "a", "b")).to.equal("b");
      expect(probe(net, "c", "b")).to.equal("b");
    } finally {
      await net.heal();
    }
    expect(probe(net, "a", "c")).to.equal("c");
  });

  it("a shaped link still carries traffic, and healing removes the shaping", async () => {
    const { what } = await net.shape("a", "b", { delayMs: 50, jitterMs: 10, lossPct: 1, reorderPct: 10 });
    expect(what).to.match(/netem|100 kbit/);
    const qdisc = () => execFileSync("ip", ["netns", "exec", net.ns("a"), "tc", "qdisc", "show", "dev", "eth0"], { encoding: "utf8" });
    expect(qdisc()).to.contain("htb");
    expect(probe(net, "a", "b")).to.equal("b");
    await net.heal();
    expect(qdisc()).not.to.contain("htb");
  });

  it("faults in force together heal one at a time: a link both cut stays cut until both heal, two shaped links share a node", async () => {
    const split = await net.partition([["a"], ["b", "c"]]);
    const bridge = await net.cut(["a", "c"]);
    const { fault: slow } = await net.shape("b", "c", { delayMs: 50, jitterMs: 10, lossPct: 1, reorderPct: 10 });
    const { fault: slower } = await net.shape("b", "a", { delayMs: 50, jitterMs: 10, lossPct: 1, reorderPct: 10 });
    try {
      expect(net.inForce).to.equal(4);
      await net.heal(split);
      expect(probe(net, "a", "b"), "a -> b, once the split is healed").to.equal("b");
      expect(probe(net, "a", "c"), "a -> c, still cut by the bridge").to.equal("hangs");
      expect(probe(net, "b", "c"), "b -> c, shaped").to.equal("c");
      await net.heal(slow);
      const filters = execFileSync("ip", ["netns", "exec", net.ns("b"), "tc", "filter", "show", "dev", "eth0"], { encoding: "utf8" });
      expect(filters, "b's filters: only the link to a is still shaped").to.contain(`${net.addr("a").split(".").map((x) => Number(x).toString(16).padStart(2, "0")).join("")}/ffffffff`);
      expect(filters).not.to.contain(`${net.addr("c").split(".").map((x) => Number(x).toString(16).padStart(2, "0")).join("")}/ffffffff`);
      await net.heal(bridge);
      expect(probe(net, "a", "c")).to.equal("c");
      await net.heal(slower);
      expect(net.inForce).to.equal(0);
      expect(execFileSync("ip", ["netns", "exec", net.ns("b"), "tc", "qdisc", "show", "dev", "eth0"], { encoding: "utf8" })).not.to.contain("htb");
    } finally {
      await net.heal();
    }
  });

  it("removes every namespace and link at the end, and what a run killed by SIGKILL left at the next start", async () => {
    const other = await Network.create(["x"]);
    await other.destroy();
    expect(namespaces()).not.to.contain(other.id);
    expect(links()).not.to.contain(other.id);

    // A run killed outright: no exit handler runs; its namespaces stay until the next run starts.
    const code = `const { Network } = await import("./test/faults/netns.ts"); const n = await Network.create(["x", "y"]); console.log(n.id); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
    const id = await new Promise<string>((resolve, reject) => {
      child.stdout!.once("data", (d: Buffer) => resolve(d.toString().trim()));
      child.once("exit", (c) => reject(new Error(`the run exited with ${c} before making its network`)));
    });
    const killed = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await killed;
    expect(namespaces()).to.contain(`${id}-x`);
    expect(links()).to.contain(id);
    const removed = await Network.removeStale();
    expect(removed).to.include(id);
    expect(namespaces()).not.to.contain(id);
    expect(links()).not.to.contain(id);
    // The network of a live run (this one) is not stale.
    expect(namespaces()).to.contain(net.ns("a"));
  });
});
