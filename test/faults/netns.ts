// The network of a fault run, as Jepsen builds one: every etcd member and every server replica in a
// network namespace of its own, each with one veth to a bridge in a namespace of the run's own (the
// hub), and one more veth from the hub to the harness's namespace, where the harness and the clients
// run. Addresses are from a private /24 the run picks (the harness .1, the nodes from .10); nothing
// listens outside the namespaces but on loopback. The nemeses cut and slow the links between nodes:
//
// - a cut between two nodes is a permanent neighbour entry on each side that sends their frames to a
//   hardware address nobody has: the packets are silently lost, both ways, as behind a partition that
//   drops them (connections hang; nothing is refused), while both nodes still reach the harness;
// - a shaped link is an HTB class on the sender's veth that the link's packets are steered into by a
//   u32 filter, with netem under it (delay, loss, reordering) where the kernel has netem; a kernel
//   without it (CONFIG_NET_SCH_NETEM unset, as on the machine this was written on) sends every other
//   packet of the link through a narrow rate and a short queue instead: delay by queueing, loss by
//   overflow, and reordering between the two halves.
//
// Names carry the harness's pid (fkn<pid>x<n>-<node>), so that a run finds and removes what a killed
// run left (its pid is gone), and runs in parallel never share a name. A run removes all of it at the
// end, also after a failure, and on the way out of a process that exits early.
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);
const PREFIX = "fkn";
/** The interface every node has towards the hub, inside its namespace. */
const DEV = "eth0";
/** Where cut frames go: a locally administered unicast address no interface has. */
const NOWHERE = "02:00:00:00:fe:ed";
let runs = 0;

async function ip(...args: string[]): Promise<string> {
  try {
    return (await run("ip", args, { timeout: 15_000 })).stdout;
  } catch (e) {
    throw new Error(`ip ${args.join(" ")}: ${(e as { stderr?: string }).stderr?.trim() || (e as Error).message}`);
  }
}

async function tc(ns: string, ...args: string[]): Promise<string> {
  return ip("netns", "exec", ns, "tc", ...args);
}

/** How a shaped link misbehaves (netem's terms). */
export interface LinkShape {
  delayMs: number;
  jitterMs: number;
  lossPct: number;
  reorderPct: number;
}

interface Shape {
  from: string;
  to: string;
  s: LinkShape;
}

/** One network fault in force (what partition, cut or shape did), to heal as one. */
export interface NetFault {
  readonly cuts: string[];
  readonly shapes: Shape[];
}

export class Network {
  /** Address of each node, by name. */
  private readonly addrs = new Map<string, string>();
  /** Directed cuts ("from>to") in force, with how many faults hold each. */
  private readonly cutCount = new Map<string, number>();
  private readonly shapes: Shape[] = [];
  private readonly active = new Set<NetFault>();
  private netemKnown?: boolean;
  private readonly cleanupOnExit = () => this.destroySync();

  private constructor(
    /** fkn<pid>x<n>: the run's namespaces are <id>-<node>, its link in the harness's namespace is <id>. */
    readonly id: string,
    readonly subnet: string,
    nodes: string[],
  ) {
    nodes.forEach((n, i) => this.addrs.set(n, `${subnet}.${10 + i}`));
  }

  /** The harness's address on the run's network. */
  get hostAddr(): string {
    return `${this.subnet}.1`;
  }

  get nodes(): string[] {
    return [...this.addrs.keys()];
  }

  addr(node: string): string {
    const a = this.addrs.get(node);
    if (!a) throw new Error(`no node ${node} in network ${this.id}`);
    return a;
  }

  ns(node: string): string {
    this.addr(node);
    return `${this.id}-${node}`;
  }

  private get hub(): string {
    return `${this.id}-hub`;
  }

  /** The start of a command that runs a program in the node's namespace (`ip netns exec` execs it: the
   * process started is the program itself, and signals reach it). */
  command(node: string): string[] {
    return ["ip", "netns", "exec", this.ns(node)];
  }

  /** Makes the namespaces, the bridge and the links; removes what killed runs left first. */
  static async create(nodes: string[]): Promise<Network> {
    await Network.removeStale();
    const id = `${PREFIX}${process.pid}x${runs++}`;
    const net = new Network(id, await pickSubnet(), nodes);
    process.once("exit", net.cleanupOnExit);
    try {
      await net.build();
    } catch (e) {
      await net.destroy();
      throw new Error(
        `the fault run's network namespaces could not be made (the partition nemeses need root and iproute2; run as root, or choose the process faults alone: npm run faults -- --nemeses process): ${(e as Error).message}`,
      );
    }
    return net;
  }

  private async build(): Promise<void> {
    const hub = this.hub;
    await ip("netns", "add", hub);
    await ip("-n", hub, "link", "set", "dev", "lo", "up");
    await ip("-n", hub, "link", "add", "br0", "type", "bridge");
    await ip("-n", hub, "link", "set", "dev", "br0", "up");
    // The harness's side: <id> here, port "host" on the bridge.
    await ip("link", "add", this.id, "type", "veth", "peer", "name", "host", "netns", hub);
    await ip("-n", hub, "link", "set", "dev", "host", "master", "br0", "up");
    await ip("addr", "add", `${this.hostAddr}/24`, "dev", this.id);
    await ip("link", "set", "dev", this.id, "up");
    for (const node of this.nodes) {
      const ns = this.ns(node);
      await ip("netns", "add", ns);
      await ip("-n", ns, "link", "set", "dev", "lo", "up");
      await ip("-n", ns, "link", "add", DEV, "type", "veth", "peer", "name", node, "netns", hub);
      await ip("-n", hub, "link", "set", "dev", node, "master", "br0", "up");
      await ip("-n", ns, "addr", "add", `${this.addr(node)}/24`, "dev", DEV);
      await ip("-n", ns, "link", "set", "dev", DEV, "up");
    }
  }

  /** Cuts every link between a node of one group and a node of another (nodes in no group keep theirs). */
  async partition(groups: string[][]): Promise<NetFault> {
    const pairs: [string, string][] = [];
    for (let i = 0; i < groups.length; i++) {
      for (let j = i + 1; j < groups.length; j++) for (const a of groups[i]) for (const b of groups[j]) pairs.push([a, b]);
    }
    return this.cut(...pairs);
  }

  /** Cuts each link given, both ways: neither node's packets reach the other. One fault, healed as one. */
  async cut(...pairs: [string, string][]): Promise<NetFault> {
    const fault: NetFault = { cuts: pairs.flatMap(([a, b]) => [`${a}>${b}`, `${b}>${a}`]), shapes: [] };
    this.active.add(fault);
    for (const c of fault.cuts) {
      const n = this.cutCount.get(c) ?? 0;
      this.cutCount.set(c, n + 1);
      const [from, to] = c.split(">");
      // Counted, so that faults in force together each heal only their own (a link cut twice stays cut
      // until both are healed).
      if (n === 0) await ip("-n", this.ns(from), "neigh", "replace", this.addr(to), "lladdr", NOWHERE, "dev", DEV, "nud", "permanent");
    }
    return fault;
  }

  /** Delay, loss and reordering on the link between a and b, both ways; what was applied, in words. */
  async shape(a: string, b: string, s: LinkShape): Promise<{ fault: NetFault; what: string }> {
    const netem = await this.hasNetem();
    const fault: NetFault = { cuts: [], shapes: [{ from: a, to: b, s }, { from: b, to: a, s }] };
    this.active.add(fault);
    this.shapes.push(...fault.shapes);
    for (const node of [a, b]) await this.applyShapes(node);
    const what = netem
      ? `netem delay ${s.delayMs}±${s.jitterMs} ms, loss ${s.lossPct} %, reorder ${s.reorderPct} %`
      : "every other packet through a 100 kbit/s queue of 8 (delay, loss, reordering; this kernel has no netem)";
    return { fault, what };
  }

  /** Network faults not yet healed. */
  get inForce(): number {
    return this.active.size;
  }

  /** Heals one fault (or, without one, every fault in force). */
  async heal(fault?: NetFault): Promise<void> {
    for (const f of fault ? [fault] : [...this.active]) {
      if (!this.active.delete(f)) continue;
      for (const c of f.cuts) {
        const n = (this.cutCount.get(c) ?? 1) - 1;
        if (n > 0) {
          this.cutCount.set(c, n);
          continue;
        }
        this.cutCount.delete(c);
        const [from, to] = c.split(">");
        await ip("-n", this.ns(from), "neigh", "del", this.addr(to), "dev", DEV).catch(() => {});
      }
      for (const sh of f.shapes) this.shapes.splice(this.shapes.indexOf(sh), 1);
      for (const node of new Set(f.shapes.map((sh) => sh.from))) await this.applyShapes(node);
    }
  }

  /** Sets the node's veth up for the shaped links from it now in force (none: as it was). */
  private async applyShapes(node: string): Promise<void> {
    const ns = this.ns(node);
    await tc(ns, "qdisc", "del", "dev", DEV, "root").catch(() => {});
    const mine = this.shapes.filter((sh) => sh.from === node);
    if (mine.length === 0) return;
    const netem = await this.hasNetem();
    // Class 1:1 (the default) is the unshaped rest; each link has its classes, which filters steer its
    // packets into (class and handle numbers are hexadecimal to tc).
    await tc(ns, "qdisc", "add", "dev", DEV, "root", "handle", "1:", "htb", "default", "1");
    await tc(ns, "class", "add", "dev", DEV, "parent", "1:", "classid", "1:1", "htb", "rate", "10gbit");
    for (const [i, { to, s }] of mine.entries()) {
      const fast = (0x10 + 2 * i).toString(16);
      const slow = (0x11 + 2 * i).toString(16);
      const dst = ["match", "ip", "dst", `${this.addr(to)}/32`];
      await tc(ns, "class", "add", "dev", DEV, "parent", "1:", "classid", `1:${fast}`, "htb", "rate", "10gbit");
      if (netem) {
        await tc(ns, "qdisc", "add", "dev", DEV, "parent", `1:${fast}`, "handle", `${fast}:`, "netem", "delay", `${s.delayMs}ms`, `${s.jitterMs}ms`, "loss", `${s.lossPct}%`, "reorder", `${s.reorderPct}%`, "50%");
      } else {
        // Without netem: every other packet of the link through a narrow class (100 kbit/s, a queue of
        // 8 packets: delay by queueing, loss by overflow), the others straight on, so that a
        // connection's packets also overtake each other (reordering). Every other: the low bit of the
        // IP identification, which a connection's packets count up (the TCP checksum is not computed
        // yet on a veth that offloads it; sequence numbers move by the write's length).
        await tc(ns, "class", "add", "dev", DEV, "parent", "1:", "classid", `1:${slow}`, "htb", "rate", "100kbit", "ceil", "100kbit", "burst", "2k");
        await tc(ns, "qdisc", "add", "dev", DEV, "parent", `1:${slow}`, "handle", `${slow}:`, "pfifo", "limit", "8");
        await tc(ns, "filter", "add", "dev", DEV, "parent", "1:", "protocol", "ip", "prio", "1", "u32", ...dst, "match", "u16", "0x0001", "0x0001", "at", "4", "flowid", `1:${slow}`);
      }
      await tc(ns, "filter", "add", "dev", DEV, "parent", "1:", "protocol", "ip", "prio", "2", "u32", ...dst, "flowid", `1:${fast}`);
    }
  }

  /** Whether the kernel has the netem qdisc (CONFIG_NET_SCH_NETEM); asked once, on the hub's bridge. */
  async hasNetem(): Promise<boolean> {
    if (this.netemKnown === undefined) {
      try {
        await tc(this.hub, "qdisc", "add", "dev", "br0", "root", "handle", "1:", "netem", "delay", "1ms");
        await tc(this.hub, "qdisc", "del", "dev", "br0", "root");
        this.netemKnown = true;
      } catch {
        this.netemKnown = false;
      }
    }
    return this.netemKnown;
  }

  /** Removes the namespaces (with the processes still in them) and the links. */
  async destroy(): Promise<void> {
    process.removeListener("exit", this.cleanupOnExit);
    await removeRun(this.id);
  }

  private destroySync(): void {
    removeRunSync(this.id);
  }

  /** Removes the namespaces and links of runs whose process is gone. */
  static async removeStale(): Promise<string[]> {
    const ids = new Set<string>();
    for (const name of await listNamespaces()) {
      const m = /^(fkn(\d+)x\d+)-/.exec(name);
      if (m && !alive(Number(m[2]))) ids.add(m[1]);
    }
    for (const link of (await ip("-o", "link", "show")).split("\n")) {
      const m = /^\d+: (fkn(\d+)x\d+)[@:]/.exec(link);
      if (m && !alive(Number(m[2]))) ids.add(m[1]);
    }
    for (const id of ids) await removeRun(id);
    return [...ids];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function listNamespaces(): Promise<string[]> {
  return (await ip("netns", "list"))
    .split("\n")
    .map((l) => l.split(" ")[0])
    .filter(Boolean);
}

async function removeRun(id: string): Promise<void> {
  for (const ns of (await listNamespaces()).filter((n) => n.startsWith(`${id}-`))) {
    // A process left in a namespace keeps it alive after `ip netns del`; end them first.
    for (const pid of (await ip("netns", "pids", ns).catch(() => "")).split("\n").filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // gone already
      }
    }
    await ip("netns", "del", ns).catch(() => {});
  }
  // Gone with its peer in the hub, unless the hub was never made.
  await ip("link", "del", "dev", id).catch(() => {});
}

function removeRunSync(id: string): void {
  const sh = (args: string[]) => {
    try {
      return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    } catch {
      return "";
    }
  };
  for (const ns of sh(["netns", "list"]).split("\n").map((l) => l.split(" ")[0]).filter((n) => n.startsWith(`${id}-`))) {
    for (const pid of sh(["netns", "pids", ns]).split("\n").filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // gone already
      }
    }
    sh(["netns", "del", ns]);
  }
  sh(["link", "del", "dev", id]);
}

/** A /24 in 10.0.0.0/8 (as "10.a.b") that no route or address of the harness's namespace overlaps. */
async function pickSubnet(): Promise<string> {
  const taken: [number, number][] = [];
  for (const r of JSON.parse(await ip("-j", "-4", "route", "show", "table", "all")) as { dst: string }[]) {
    const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)(?:\/(\d+))?$/.exec(r.dst);
    if (!m) continue;
    const bits = Number(m[5] ?? 32);
    if (bits === 0) continue;
    const base = ((Number(m[1]) << 24) | (Number(m[2]) << 16) | (Number(m[3]) << 8) | Number(m[4])) >>> 0;
    taken.push([base, bits]);
  }
  const overlaps = (base: number) =>
    taken.some(([b, bits]) => {
      const n = Math.min(bits, 24);
      const mask = n === 0 ? 0 : (~0 << (32 - n)) >>> 0;
      return ((b & mask) >>> 0) === ((base & mask) >>> 0);
    });
  for (let i = 0; i < 1_000; i++) {
    const a = 64 + Math.floor(Math.random() * 190);
    const b = Math.floor(Math.random() * 256);
    if (!overlaps(((10 << 24) | (a << 16) | (b << 8)) >>> 0)) return `10.${a}.${b}`;
  }
  throw new Error("no free /24 in 10.0.0.0/8 for the fault run's network");
}
