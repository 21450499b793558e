// Issue 21, target 6, in the one bench run: a plain grpc-js stub client renewing many leases one id a
// message, as etcd's own LeaseKeepAlive protocol does, every lease every TTL/3 (keepalive-one-id.ts, run
// as a process of its own with a fresh server and etcd, so that no other row's load is in them). The
// target run holds 10,000 leases for 5 minutes: `npm run bench -- --only keepalive --hold 300`.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Table } from "./report.js";
import type { Flags, Scenario } from "./scenario.js";

const SCRIPT = fileURLToPath(new URL("./keepalive-one-id.ts", import.meta.url));
const LEASES = 10_000;
const TARGET = { leases: 10_000, seconds: 300, core: 0.25 };

/** Seconds held: the run's --hold, at most the target's 5 minutes. */
const seconds = (f: Flags) => Math.min(f.hold, TARGET.seconds);

export const keepalive: Scenario = {
  name: "keepalive",
  about: "a plain stub client renewing 10,000 leases one id a message every TTL/3 (TTL 10 s), for --hold seconds: leases lost, server CPU",
  estimate: (f: Flags) => seconds(f) + 40,
  async run(ctx) {
    ctx.progress(`keepalive: ${LEASES.toLocaleString("en-US")} leases, one id a message, held ${seconds(ctx.flags)} s`);
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", SCRIPT, "--leases", String(LEASES), "--seconds", String(seconds(ctx.flags))], { stdio: ["ignore", "pipe", "inherit"] });
      let text = "";
      child.stdout.on("data", (d) => (text += d));
      child.on("error", reject);
      child.on("exit", (code) => (code === 0 ? resolve(text) : reject(new Error(`keepalive-one-id.ts exited with ${code}:\n${text}`))));
    });
    const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? NaN);
    const lost = num(/leases lost \(gone at the end\): (\d+)/);
    const core = num(/server CPU ([\d.]+) of a core/);
    const perMessage = num(/\((\d+) µs a message\)/);
    const cut = /stream cut: no/.test(out) ? "no" : "yes";
    const table = new Table(`KeepAlive, one lease id a message (a plain grpc-js stub client), TTL 10 s, held ${seconds(ctx.flags)} s`, [
      { title: "leases", width: 7 },
      { title: "lost", width: 5 },
      { title: "stream cut", width: 10 },
      { title: "server CPU (core)", width: 17 },
      { title: "µs a message", width: 12 },
    ]);
    table.row([LEASES.toLocaleString("en-US"), String(lost), cut, core.toFixed(3), String(perMessage)]);
    for (const line of out.trim().split("\n")) table.note(line);
    const ok = lost === 0 && cut === "no" && core < TARGET.core;
    return {
      json: { leases: LEASES, seconds: seconds(ctx.flags), lost, core, perMessageUs: perMessage, output: out },
      checks: [
        {
          target: `21.6 A plain stub client, ${TARGET.leases.toLocaleString("en-US")} leases one id a message, ${TARGET.seconds / 60} min: 0 lost, server < ${TARGET.core} core`,
          status: ok ? (seconds(ctx.flags) >= TARGET.seconds ? "met" : "met at a smaller size") : "not met",
          detail: `${lost} lost, server ${core.toFixed(3)} of a core, ${perMessage} µs a message, over ${seconds(ctx.flags)} s${seconds(ctx.flags) < TARGET.seconds ? " (the target run: --only keepalive --hold 300)" : ""}`,
        },
      ],
    };
  },
};
