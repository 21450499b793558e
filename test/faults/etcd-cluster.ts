// A real 3-member etcd cluster on loopback ports (or each member in a network namespace of its own,
// netns.ts), in a temporary folder, for the fault-injection runs.
// Members are started and stopped one by one (a member restarted keeps its data and its ports, so it
// rejoins as itself), frozen with SIGSTOP, and the whole cluster can be stopped and started again from
// its data. The binary is the one the test harness uses: etcd on PATH, installed by scripts/setup.sh.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ETCD_INSTALL_HINT, EMBEDDED_ETCD_MAX_REQUEST_BYTES, etcdAvailable, freePorts } from "../../server/etcd/embedded.js";
import type { Network } from "./netns.js";

const CLUSTER_TOKEN = "fencekeeper-faults";

export interface Member {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  /** The running process, or undefined while stopped. */
  process?: ChildProcess;
  paused: boolean;
  /** How its last process ended (code or signal), for a cluster that does not come back. */
  exited?: string;
}

export class EtcdCluster {
  readonly members: Member[];

  private constructor(
    readonly dir: string,
    members: Member[],
    /** When given, each member runs in the network namespace named as it is (netns.ts). */
    readonly net?: Network,
    /** etcd's --quota-backend-bytes (the etcd-quota nemesis fills it); etcd's default otherwise. */
    readonly quotaBytes?: number,
  ) {
    this.members = members;
  }

  /** Starts three members and waits until the cluster has a leader; with a network, member m<i> in
   * its namespace, on its address there. */
  static async start(size = 3, net?: Network, quotaBytes?: number): Promise<EtcdCluster> {
    if (!etcdAvailable()) throw new Error(`the fault runs need etcd on PATH. Install it with:\n  ${ETCD_INSTALL_HINT}`);
    const dir = mkdtempSync(join(tmpdir(), "fencekeeper-faults-etcd-"));
    const members: Member[] = [];
    for (let i = 0; i < size; i++) {
      const name = `m${i}`;
      const [host, client, peer] = net ? [net.addr(name), 2379, 2380] : ["127.0.0.1", ...(await freePorts(2))];
      members.push({ name, clientUrl: `http://${host}:${client}`, peerUrl: `http://${host}:${peer}`, paused: false });
    }
    const cluster = new EtcdCluster(dir, members, net, quotaBytes);
    await Promise.all(members.map((m) => cluster.startMember(m)));
    await cluster.waitForLeader();
    return cluster;
  }

  get endpoints(): string[] {
    return this.members.map((m) => m.clientUrl);
  }

  /** Starts a stopped member from its data folder (or a new one, the first time). */
  async startMember(m: Member): Promise<void> {
    if (m.process) return;
    const initialCluster = this.members.map((x) => `${x.name}=${x.peerUrl}`).join(",");
    const args = [
      "--name", m.name,
      "--data-dir", join(this.dir, m.name),
      "--listen-client-urls", m.clientUrl,
      "--advertise-client-urls", m.clientUrl,
      "--listen-peer-urls", m.peerUrl,
      "--initial-advertise-peer-urls", m.peerUrl,
      "--initial-cluster", initialCluster,
      "--initial-cluster-token", CLUSTER_TOKEN,
      // Ignored once the member has data: a restarted member rejoins with what it kept.
      "--initial-cluster-state", "new",
      "--max-request-bytes", String(EMBEDDED_ETCD_MAX_REQUEST_BYTES),
      // The history the checker reads back is all of it: nothing is compacted during a run.
      "--auto-compaction-retention", "0",
      "--log-level", "warn",
      ...(this.quotaBytes !== undefined ? ["--quota-backend-bytes", String(this.quotaBytes)] : []),
    ];
    mkdirSync(join(this.dir, "logs"), { recursive: true });
    const log = createWriteStream(join(this.dir, "logs", `${m.name}.log`), { flags: "a" });
    const [program, ...first] = [...(this.net?.command(m.name) ?? []), "etcd"];
    const child = spawn(program, [...first, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    const killOnExit = () => child.kill("SIGKILL");
    process.once("exit", killOnExit);
    child.once("exit", (code, signal) => {
      m.exited = signal ?? `code ${code}`;
      process.removeListener("exit", killOnExit);
      if (m.process === child) m.process = undefined;
      log.end();
    });
    m.process = child;
    m.paused = false;
  }

  /** SIGKILL (crash) or SIGTERM (clean stop); resolves once the process is gone. */
  async stopMember(m: Member, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const child = m.process;
    if (!child) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGCONT");
    child.kill(signal);
    const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(t);
    m.paused = false;
  }

  pauseMember(m: Member): void {
    m.process?.kill("SIGSTOP");
    m.paused = true;
  }

  resumeMember(m: Member): void {
    m.process?.kill("SIGCONT");
    m.paused = false;
  }

  /** The member that leads now, as the running members report it; undefined when none knows. */
  async leader(): Promise<Member | undefined> {
    for (const m of this.members) {
      if (!m.process || m.paused) continue;
      const s = await status(m.clientUrl);
      if (!s || s.leader === "0") continue;
      for (const x of this.members) {
        if (!x.process || x.paused) continue;
        const xs = await status(x.clientUrl);
        if (xs?.memberId === s.leader) return x;
      }
    }
    return undefined;
  }

  /** Each member as the harness sees it: running (and the leader it knows), paused, or how it ended. */
  async describe(): Promise<string> {
    const parts: string[] = [];
    for (const m of this.members) {
      if (!m.process) parts.push(`${m.name} not running (${m.exited ?? "never started"})`);
      else if (m.paused) parts.push(`${m.name} paused`);
      else {
        const s = await status(m.clientUrl);
        parts.push(s ? `${m.name} running, member ${s.memberId}, knows leader ${s.leader}, alarms: ${await alarmsOf(m.clientUrl)}` : `${m.name} running, not answering`);
      }
    }
    return parts.join("; ");
  }

  /** Waits until a leader is known and it serves a linearizable read. */
  async waitForLeader(timeoutMs = 60_000): Promise<Member> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const l = await this.leader();
      const h = l ? await health(l.clientUrl) : "";
      if (l && h === "true") return l;
      if (Date.now() > deadline) {
        const why = l ? `its leader ${l.name} is known, and its /health says ${h}` : "no member knows a leader";
        throw new Error(`the etcd cluster has no healthy leader after ${timeoutMs} ms: ${why} (${await this.describe()}); logs in ${join(this.dir, "logs")}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async stopAll(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    await Promise.all(this.members.map((m) => this.stopMember(m, signal)));
  }

  async startAll(): Promise<void> {
    await Promise.all(this.members.map((m) => this.startMember(m)));
    await this.waitForLeader();
  }

  async destroy(keepData = false): Promise<void> {
    await this.stopAll("SIGKILL");
    if (!keepData) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A member's own view (etcd's JSON gateway): its id and the leader it knows, as decimal strings. */
async function status(clientUrl: string): Promise<{ memberId: string; leader: string } | undefined> {
  try {
    const res = await fetch(`${clientUrl}/v3/maintenance/status`, { method: "POST", body: "{}", signal: AbortSignal.timeout(1_000) });
    if (!res.ok) return undefined;
    const body = (await res.json()) as { header?: { member_id?: string }; leader?: string };
    return { memberId: String(body.header?.member_id ?? ""), leader: String(body.leader ?? "0") };
  } catch {
    return undefined;
  }
}

/** The alarms a member lists (etcd's JSON gateway), as "NOSPACE on <member id>", or "none". */
async function alarmsOf(clientUrl: string): Promise<string> {
  try {
    const res = await fetch(`${clientUrl}/v3/maintenance/alarm`, { method: "POST", body: JSON.stringify({ action: "GET" }), signal: AbortSignal.timeout(2_000) });
    const body = (await res.json()) as { alarms?: { memberID?: string; alarm?: string }[] };
    const list = (body.alarms ?? []).map((a) => `${a.alarm ?? "?"} on ${a.memberID ?? "?"}`);
    return list.length ? list.join(", ") : "none";
  } catch (err) {
    return `not known (${(err as Error).name})`;
  }
}

/** etcd's /health of a member: "true", or why not (its reason: an alarm raised, a read that failed). */
async function health(clientUrl: string): Promise<string> {
  try {
    const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(2_000) });
    const body = (await res.json().catch(() => ({}))) as { health?: string; reason?: string };
    return body.health === "true" && res.ok ? "true" : `${body.health ?? `HTTP ${res.status}`}${body.reason ? ` (${body.reason})` : ""}`;
  } catch (err) {
    return `no answer (${(err as Error).name})`;
  }
}
