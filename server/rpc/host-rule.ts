// Which Host a request may name, on a listener that a web page could reach without credentials: the API
// port when the server has no authentication of its own, and the console on a loopback address.
//
// DNS rebinding: a page on rebind.evil.example points its name at 127.0.0.1 (or at any address the
// browser can reach) and calls the server as if it were its own origin. The browser sends what the page
// asked for, so the request names the page's host, never the server's. A name the server does not know
// is refused; an IP literal is not, since a page can carry one as its origin only if it was served from
// that very address; nor is a request that names no host, which no browser sends.

/** What a listener accepts in Host (or :authority), and what a refusal says. */
export interface HostRule {
  /** Whether the Host header (host or host:port; undefined: none sent) is one this listener answers. */
  allows(host: string | undefined): boolean;
  /** The names accepted, for a refusal's message. */
  readonly names: readonly string[];
}

/** Every name: the flag's value that turns the check off, told explicitly. */
export const ANY_HOST = "*";

/**
 * The rule of a listener on listenHost (as --listen gives it: a name or an address): IP literals,
 * localhost, the listen host itself, and the names the operator gave (--allowed-hosts; "*": any).
 */
export function hostRule(listenHost: string, allowed: readonly string[] = []): HostRule {
  const names = new Set(["localhost", ...allowed].map(normalize));
  if (!isIpLiteral(listenHost)) names.add(normalize(listenHost));
  const any = names.has(ANY_HOST);
  return {
    names: [...names],
    allows(host) {
      if (host === undefined || host === "" || any) return true;
      const name = hostName(host);
      return name !== undefined && (isIpLiteral(name) || names.has(normalize(name)));
    },
  };
}

/** The name of a Host header without its port (an IPv6 literal without its brackets); undefined: not a Host. */
function hostName(host: string): string | undefined {
  const h = host.trim();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    if (end < 0 || (end + 1 < h.length && !/^:\d*$/.test(h.slice(end + 1)))) return undefined;
    return h.slice(1, end);
  }
  const m = /^([^:]*)(?::\d*)?$/.exec(h);
  return m ? m[1] : undefined;
}

/** Lower case, without the root's trailing dot ("Example.COM." is example.com). */
function normalize(name: string): string {
  return name.trim().toLowerCase().replace(/\.$/, "");
}

function isIpLiteral(name: string): boolean {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(name)) return name.split(".").every((p) => Number(p) <= 255);
  // IPv6 (possibly with a zone): hex groups and colons, at least two of them.
  return /^[0-9a-f:.]+(%[\w.-]+)?$/i.test(name) && name.includes(":");
}

/** The refusal's words: what the request named, what is accepted, and how to add a name. */
export function hostRefusal(host: string | undefined, rule: HostRule): string {
  return (
    `this server has no authentication and answers only requests addressed to it by an IP address or a name it knows ` +
    `(${rule.names.join(", ")}), against DNS rebinding; this one names ${JSON.stringify((host ?? "").slice(0, 256))}. ` +
    `Add the name to --allowed-hosts (FENCEKEEPER_ALLOWED_HOSTS) if clients reach the server by it, or set up authentication (--tls-client-ca, --jwt-keys)`
  );
}
