// The console's page (served by server/console/console-server.ts, bundled by scripts/build.sh): the
// resources in use, from ListResources, each kept live by an Observe stream, over Connect from the
// browser to the port that served the page, with the bearer token the user gives (the policy decides
// what the page shows). Read-only: it calls ListResources, Describe and Observe, nothing else.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { LeaseService, type DescribeResponse } from "../gen/ts/fencekeeper/v1/lease_pb.js";

const BEARER = "fencekeeper.console.bearer";
const LIST_EVERY_MS = 2000;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const prefixInput = $<HTMLInputElement>("prefix");
const bearerInput = $<HTMLInputElement>("bearer");
const statusLine = $<HTMLDivElement>("status");
const tbody = $<HTMLTableSectionElement>("resources");
bearerInput.value = sessionStorage.getItem(BEARER) ?? "";
bearerInput.addEventListener("change", () => {
  sessionStorage.setItem(BEARER, bearerInput.value.trim());
  restart();
});
prefixInput.addEventListener("change", () => restart());
$<HTMLFormElement>("settings").addEventListener("submit", (e) => e.preventDefault());

const withBearer: Interceptor = (next) => (req) => {
  const token = sessionStorage.getItem(BEARER);
  if (token) req.header.set("authorization", `Bearer ${token}`);
  return next(req);
};
const client = createClient(LeaseService, createConnectTransport({ baseUrl: location.origin, interceptors: [withBearer] }));

interface Shown {
  tr: HTMLTableRowElement;
  /** When this page first saw the current generation held (the server keeps no grant time). */
  since?: { generation: bigint; at: number };
  state?: DescribeResponse;
  watch: AbortController;
}
const shown = new Map<string, Shown>();

function inUse(s: DescribeResponse): boolean {
  return s.held || s.waiters > 0 || s.lockDelayUntil !== undefined;
}

function seconds(d: { seconds: bigint; nanos: number } | undefined): string {
  return d ? `${Number(d.seconds) + Math.round(d.nanos / 1e8) / 10} s` : "";
}

function age(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.floor(s / 60)} min` : `${Math.floor(s / 3600)} h`;
}

function render(resource: string, row: Shown): void {
  const s = row.state;
  if (!s) return;
  const exclusive = s.held && s.token !== undefined;
  const generation = exclusive ? s.token!.generation : s.holders[0]?.token?.generation;
  if (s.held && generation !== undefined && row.since?.generation !== generation) row.since = { generation, at: Date.now() };
  if (!s.held) row.since = undefined;
  const mode = !s.held ? "—" : exclusive ? "exclusive" : s.maxHolders > 0 ? `semaphore ${s.holders.length}/${s.maxHolders}` : `shared ×${s.holders.length}`;
  const holder = exclusive ? s.holder : s.holders.map((h) => h.holder).join(", ");
  const principal = exclusive ? s.holderPrincipal : [...new Set(s.holders.map((h) => h.holderPrincipal))].join(", ");
  const delay = s.lockDelayUntil ? `until ${new Date(Number(s.lockDelayUntil.seconds) * 1000).toLocaleTimeString()}` : s.lockDelay ? seconds(s.lockDelay) : "";
  const cells: [string, boolean?][] = [
    [resource],
    [mode],
    [holder],
    [principal],
    [generation !== undefined ? String(generation) : "", true],
    [String(s.fence), true],
    [delay],
    [String(s.waiters), true],
    [exclusive ? seconds(s.ttl) : ""],
    [row.since ? age(Date.now() - row.since.at) : ""],
  ];
  row.tr.replaceChildren(
    ...cells.map(([text, num]) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (num) td.className = "num";
      return td;
    }),
  );
  row.tr.className = s.lockDelayUntil ? "delay" : s.held ? "held" : "free";
  row.tr.dataset.resource = resource;
}

function place(resource: string, tr: HTMLTableRowElement): void {
  const after = [...tbody.rows].find((r) => (r.dataset.resource ?? "") > resource);
  tbody.insertBefore(tr, after ?? null);
}

function remove(resource: string): void {
  const row = shown.get(resource);
  if (!row) return;
  row.watch.abort();
  row.tr.remove();
  shown.delete(resource);
}

/** Keeps one resource's row live: each change Observe reports is described again (waiters, fence, TTL). */
async function watch(resource: string, row: Shown): Promise<void> {
  try {
    for await (const _change of client.observe({ resource }, { signal: row.watch.signal })) {
      const state = await client.describe({ resource }, { signal: row.watch.signal });
      if (!inUse(state)) {
        remove(resource);
        return;
      }
      row.state = state;
      render(resource, row);
    }
  } catch (err) {
    if (row.watch.signal.aborted) return;
    report(err);
  }
  // The stream ended (the server restarted, a deadline): the next listing opens it again.
  if (shown.get(resource) === row) remove(resource);
}

function show(resource: string, state: DescribeResponse): void {
  let row = shown.get(resource);
  if (!row) {
    row = { tr: document.createElement("tr"), watch: new AbortController() };
    shown.set(resource, row);
    row.state = state;
    render(resource, row);
    place(resource, row.tr);
    void watch(resource, row);
    return;
  }
  row.state = state;
  render(resource, row);
}

function report(err: unknown): void {
  const e = ConnectError.from(err);
  statusLine.className = "error";
  statusLine.textContent =
    e.code === Code.Unauthenticated
      ? `not authenticated: ${e.rawMessage} (give a bearer token above)`
      : e.code === Code.PermissionDenied
        ? `not allowed: ${e.rawMessage}`
        : `${Code[e.code]}: ${e.rawMessage}`;
}

let listing = new AbortController();

async function listAll(signal: AbortSignal): Promise<void> {
  const seen = new Set<string>();
  let pageToken = "";
  do {
    const page = await client.listResources({ prefix: prefixInput.value.trim(), pageSize: 500, pageToken }, { signal });
    for (const r of page.resources) {
      if (!r.state || !inUse(r.state)) continue;
      seen.add(r.resource);
      show(r.resource, r.state);
    }
    pageToken = page.nextPageToken;
  } while (pageToken);
  for (const resource of [...shown.keys()]) if (!seen.has(resource)) remove(resource);
  statusLine.className = "";
  statusLine.textContent = `${shown.size} resource${shown.size === 1 ? "" : "s"} in use · updated ${new Date().toLocaleTimeString()}`;
  document.body.dataset.listed = String(Date.now());
}

async function loop(signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      await listAll(signal);
    } catch (err) {
      if (signal.aborted) return;
      report(err);
    }
    await new Promise((resolve) => setTimeout(resolve, LIST_EVERY_MS));
  }
}

function restart(): void {
  listing.abort();
  for (const resource of [...shown.keys()]) remove(resource);
  listing = new AbortController();
  void loop(listing.signal);
}

restart();
// The "held for" column moves on by itself.
setInterval(() => {
  for (const [resource, row] of shown) render(resource, row);
}, 1000);
