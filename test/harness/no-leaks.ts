// Every mocha run loads this (.mocharc.json, which has no `exit: true`): after the last test of the
// process (of each file, in a worker of parallel mode), nothing a test opened may still be open: a socket,
// a server, a timer or a child process left behind would keep the process alive (mocha would not exit by
// itself) or leak into the next file. The check names what is left, so the test that left it can be found.
import { createHook } from "node:async_hooks";

const watched = new Set(["TCPSocketWrap", "TCPServerWrap", "TCPWrap", "PipeServerWrap", "UDPWrap", "ProcessWrap", "FSEventWrap", "StatWatcher"]);

// Where each timer was set, while it lives: a leaked timer's type alone would not say which test left it.
const timers = new Map<number, { timer: NodeJS.Timeout; stack: string }>();
createHook({
  init(asyncId, type, _trigger, resource) {
    if (type !== "Timeout") return;
    const stack = (new Error().stack ?? "").split("\n").slice(1).find((l) => !l.includes("node:") && !l.includes("no-leaks.ts")) ?? "";
    timers.set(asyncId, { timer: resource as NodeJS.Timeout, stack: stack.trim() });
  },
  destroy(asyncId) {
    timers.delete(asyncId);
  },
}).enable();

/** What is open now that a test could have left: counts by type, and what is known of each handle. */
export function leftOpen(): string[] {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) if (watched.has(type)) counts.set(type, (counts.get(type) ?? 0) + 1);
  // Timers are counted from the ones seen set, without mocha's own (the last test's timeout, cleared later).
  const live = [...timers.values()].filter(({ timer, stack }) => timer.hasRef() && !(timer as unknown as { _destroyed: boolean })._destroyed && !stack.includes("/mocha/lib/"));
  counts.delete("Timeout");
  if (live.length > 0) counts.set("Timeout", live.length);
  if (counts.size === 0) return [];
  const details: string[] = [];
  // The handles themselves say more than their types: where a socket goes, which program a child runs.
  for (const h of (process as unknown as { _getActiveHandles(): any[] })._getActiveHandles()) {
    const kind = h?.constructor?.name;
    if (kind === "Socket" && h.remotePort !== undefined) details.push(`a socket to ${h.remoteAddress}:${h.remotePort} (from port ${h.localPort})`);
    else if (kind === "Server" && typeof h.address === "function" && h.address()) details.push(`a server listening on ${JSON.stringify(h.address())}`);
    else if (kind === "ChildProcess") details.push(`child process ${h.pid}: ${[h.spawnfile, ...(h.spawnargs ?? []).slice(1)].join(" ")}`);
  }
  for (const { stack } of live) details.push(`a timer set ${stack || "(no stack outside node)"}`);
  return [[...counts].map(([type, n]) => `${n} ${type}`).join(", "), ...details];
}

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(0); // mocha's own timer for the hook would count as an open Timeout; the wait below is bounded
    // What a test closed may take a few turns of the event loop to be gone, or, on a loaded machine, a
    // few seconds (a server's last connections closing after it exits).
    const until = Date.now() + 3000;
    let open = leftOpen();
    while (open.length > 0 && Date.now() < until) {
      await new Promise((r) => setImmediate(r)); // not a timer: it would count as one
      open = leftOpen();
    }
    // Mocha ends without exiting the process: if anything still holds it (what this hook names, or a kind
    // of handle it does not look for), end it, so that a leak fails the run rather than hangs it.
    // (Not in a worker of parallel mode, which its pool keeps and ends.)
    if (!process.send) {
      setTimeout(() => {
        console.error(`no-leaks: the process did not end by itself within 5 s of the last test; open: ${process.getActiveResourcesInfo().join(", ")}`);
        process.exit(process.exitCode || 1);
      }, 5000).unref();
    }
    if (open.length > 0) throw new Error(`the tests left open what would keep the process alive: ${open.join("; ")}`);
  },
};
