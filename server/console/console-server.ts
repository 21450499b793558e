// The read-only web console (--console-listen, off unless set): one page that lists the resources in
// use with holder, principal, generation, fence, mode, lock-delay and waiters, kept live by one
// ListResources listing every few seconds, not a call per row (console/app.ts, bundled by build.sh). The page
// calls the API on this same port, with the credentials the user gives it, and those calls go to the
// server's own handler, so they run through the one call pipeline (authentication, the policy, the log
// and the metrics) like any other: the policy decides what the page shows. Only the read-only methods
// are served here; every other path is 404. On a loopback address, requests must name the address in
// their Host header, so that a web page elsewhere cannot reach the console through DNS rebinding.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { LeaseService } from "../../gen/ts/fencekeeper/v1/lease_pb.js";
import { isLoopback, type HostPort } from "../rpc/transport.js";
import { hostRule } from "../rpc/host-rule.js";
import type { Handler } from "../rpc/transport.js";

/** The one method the page calls, which changes nothing. */
const READ_ONLY = new Set([`/${LeaseService.typeName}/ListResources`]);

const HEADERS = {
  // The page loads only itself and talks only to its own origin.
  "content-security-policy": "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

interface Assets {
  html: Buffer;
  js: Buffer;
}

/** The built page: dist/console/ beside the compiled server, or of the checkout when run from source. */
function loadAssets(): Assets {
  const candidates = ["../../console/", "../../dist/console/"].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  for (const dir of candidates) {
    if (existsSync(`${dir}app.js`) && existsSync(`${dir}index.html`)) return { html: readFileSync(`${dir}index.html`), js: readFileSync(`${dir}app.js`) };
  }
  throw new Error(`--console-listen: the console's page is not built (looked in ${candidates.join(", ")}); run npm run build`);
}

/** The console's request handler: the page, and the read-only API methods, handed to the server's own handler. */
export function consoleHandler(api: Handler, at: HostPort, allowedHosts: readonly string[] = []): Handler {
  const assets = loadAssets();
  const hosts = isLoopback(at.host) ? hostRule(at.host, allowedHosts) : undefined;
  return (req, res) => {
    const host = [req.headers[":authority"] ?? req.headers.host].flat()[0];
    if (hosts && !hosts.allows(host)) {
      res.writeHead(421, { "content-type": "text/plain" });
      res.end(`the console answers requests addressed to an IP address or to ${hosts.names.join(", ")}, not ${JSON.stringify(host)}\n`);
      return;
    }
    const path = (req.url ?? "").split("?")[0];
    if (req.method === "GET" && (path === "/" || path === "/index.html")) {
      res.writeHead(200, { ...HEADERS, "content-type": "text/html; charset=utf-8" });
      res.end(assets.html);
      return;
    }
    if (req.method === "GET" && path === "/app.js") {
      res.writeHead(200, { ...HEADERS, "content-type": "text/javascript; charset=utf-8" });
      res.end(assets.js);
      return;
    }
    if (READ_ONLY.has(path)) {
      api(req, res);
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" });
    res.end("the console serves its page at / and the one read-only call it makes (ListResources)\n");
  };
}
