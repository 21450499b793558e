// The console's page (served by server/console/console-server.ts, bundled by scripts/build.sh): the
// resources in use, with holder, principal, generation, fence, mode, lock-delay and waiters, over
// Connect from the browser to the port that served the page, with the bearer token the user gives (the
// policy decides what the page shows). Read-only: it calls ListResources, nothing else.
//
// One listing for the whole page, never a call per row: every refresh follows ListResources' page
// tokens to the end (a page may be cut short by count or by bytes), then shows that listing at once.
// A browser opens at most 6 HTTP/1.1 connections to an origin, so a stream per row would leave none for
// the listing past a few rows. One tab has at most one call open at a time, and rests between refreshes
// at least as long as the last one took (REFRESH_MS at least): whatever the listing costs the server, a
// tab asks for it at most half of the time, and not at all while the tab is hidden.
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { toBinary } from "@bufbuild/protobuf";
import { LeaseService, ListResourcesResponseSchema, type DescribeResponse } from "../gen/ts/fencekeeper/v1/lease_pb.js";
import { visibleParts, visibleText } from "../cli/visible-text.js";

const BEARER = "fencekeeper.console.bearer";
/** The least time between the end of one listing and the start of the next. */
const REFRESH_MS = 2000;
/** Resources per ListResources call (the server may answer fewer, and say where to go on). */
const PAGE_SIZE = 500;

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
const client = createClient(LeaseService, createConnectTransport({ baseUrl: location.origin, useBinaryFormat: true, interceptors: [withBearer] }));

/** The columns whose text is a name someone chose: shown with hidden characters escaped, and marked. */
const NAMED = new Set([0, 2, 3]);
const NUMERIC = new Set([4, 5, 7]);
const COLUMNS = 10;

interface Shown {
  tr: HTMLTableRowElement;
  cells: HTMLTableCellElement[];
  /** What each cell shows now: a cell is written again only when its text changes. */
  texts: string[];
  /** When this page first saw the current generation held (the server keeps no grant time). */
  since?: { generation: bigint; at: number };
  state: DescribeResponse;
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

function write(td: HTMLTableCellElement, text: string, named: boolean): void {
  if (!named) {
    td.textContent = text;
    return;
  }
  td.replaceChildren(
    ...visibleParts(text).map(({ text, escaped }) => {
      if (!escaped) return document.createTextNode(text);
      const mark = document.createElement("span");
      mark.className = "escaped";
      mark.title = "a character that would change or hide how this name reads, shown as its escape";
      mark.textContent = text;
      return mark;
    }),
  );
}

function render(resource: string, row: Shown): void {
  const s = row.state;
  const exclusive = s.held && s.token !== undefined;
  const generation = exclusive ? s.token!.generation : s.holders[0]?.token?.generation;
  if (s.held && generation !== undefined && row.since?.generation !== generation) row.since = { generation, at: Date.now() };
  if (!s.held) row.since = undefined;
  const mode = !s.held ? "—" : exclusive ? "exclusive" : s.maxHolders > 0 ? `semaphore ${s.holders.length}/${s.maxHolders}` : `shared ×${s.holders.length}`;
  const holder = exclusive ? s.holder : s.holders.map((h) => h.holder).join(", ");
  const principal = exclusive ? s.holderPrincipal : [...new Set(s.holders.map((h) => h.holderPrincipal))].join(", ");
  const delay = s.lockDelayUntil ? `until ${new Date(Number(s.lockDelayUntil.seconds) * 1000).toLocaleTimeString()}` : s.lockDelay ? seconds(s.lockDelay) : "";
  const texts = [
    resource,
    mode,
    holder,
    principal,
    generation !== undefined ? String(generation) : "",
    String(s.fence),
    delay,
    String(s.waiters),
    exclusive ? seconds(s.ttl) : "",
    row.since ? age(Date.now() - row.since.at) : "",
  ];
  for (let i = 0; i < COLUMNS; i++) {
    if (row.texts[i] === texts[i]) continue;
    write(row.cells[i], texts[i], NAMED.has(i));
    row.texts[i] = texts[i];
  }
  const className = s.lockDelayUntil ? "delay" : s.held ? "held" : "free";
  if (row.tr.className !== className) row.tr.className = className;
}

function newRow(resource: string, state: DescribeResponse): Shown {
  const tr = document.createElement("tr");
  tr.dataset.resource = resource;
  const cells = Array.from({ length: COLUMNS }, (_, i) => {
    const td = tr.insertCell();
    if (NUMERIC.has(i)) td.className = "num";
    return td;
  });
  return { tr, cells, texts: [], state };
}

/** Shows one whole listing: rows in its order (the server's name order), each written where it changed. */
function showListing(listing: { resource: string; state: DescribeResponse }[]): void {
  const listed = new Set(listing.map((r) => r.resource));
  for (const [resource, row] of shown) {
    if (listed.has(resource)) continue;
    row.tr.remove();
    shown.delete(resource);
  }
  let next = tbody.firstElementChild;
  for (const { resource, state } of listing) {
    let row = shown.get(resource);
    if (!row) {
      row = newRow(resource, state);
      shown.set(resource, row);
    }
    row.state = state;
    render(resource, row);
    if (row.tr === next) next = next.nextElementSibling;
    else tbody.insertBefore(row.tr, next);
  }
}

function report(err: unknown, updated: Date | undefined): void {
  const e = ConnectError.from(err);
  statusLine.className = "error";
  const why =
    e.code === Code.Unauthenticated
      ? `not authenticated: ${e.rawMessage} (give a bearer token above)`
      : e.code === Code.PermissionDenied
        ? `not allowed: ${e.rawMessage}`
        : `${Code[e.code]}: ${e.rawMessage}`;
  statusLine.textContent = visibleText(why) + (updated ? ` · the table is as of ${updated.toLocaleTimeString()}` : "");
}

/** Every resource in use under the prefix: ListResources from the first page to the last. */
async function listAll(signal: AbortSignal): Promise<{ listing: { resource: string; state: DescribeResponse }[]; calls: number; bytes: number }> {
  const listing: { resource: string; state: DescribeResponse }[] = [];
  let pageToken = "";
  let calls = 0;
  let bytes = 0;
  do {
    const page = await client.listResources({ prefix: prefixInput.value.trim(), pageSize: PAGE_SIZE, pageToken }, { signal });
    calls++;
    bytes += toBinary(ListResourcesResponseSchema, page).byteLength;
    for (const r of page.resources) if (r.state && inUse(r.state)) listing.push({ resource: r.resource, state: r.state });
    pageToken = page.nextPageToken;
  } while (pageToken);
  return { listing, calls, bytes };
}

/** Resolves after `ms`, or at once when the tab is shown again after being hidden. */
function rest(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    document.addEventListener("visibilitychange", done);
    signal.addEventListener("abort", done);
  });
}

async function loop(signal: AbortSignal): Promise<void> {
  let updated: Date | undefined;
  while (!signal.aborted) {
    // A hidden tab asks nothing: it lists again as soon as it is shown.
    if (document.visibilityState === "hidden") {
      await rest(60 * 60_000, signal);
      continue;
    }
    const started = performance.now();
    try {
      const { listing, calls, bytes } = await listAll(signal);
      if (signal.aborted) return;
      showListing(listing);
      updated = new Date();
      const took = Math.round(performance.now() - started);
      statusLine.className = "";
      statusLine.textContent =
        `${shown.size} resource${shown.size === 1 ? "" : "s"} in use · updated ${updated.toLocaleTimeString()} ` +
        `(${calls} call${calls === 1 ? "" : "s"}, ${bytes < 10_240 ? `${bytes} bytes` : `${Math.round(bytes / 1024)} KiB`}, ${took} ms)`;
      document.body.dataset.listed = String(Date.now());
    } catch (err) {
      if (signal.aborted) return;
      report(err, updated);
    }
    await rest(Math.max(REFRESH_MS, performance.now() - started), signal);
  }
}

let listing = new AbortController();

function restart(): void {
  listing.abort();
  showListing([]);
  listing = new AbortController();
  void loop(listing.signal);
}

restart();
// The "held (seen) for" column moves on by itself.
setInterval(() => {
  for (const [resource, row] of shown) render(resource, row);
}, 1000);
