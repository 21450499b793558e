// Who is calling: every request's caller, from its client certificate (mutual TLS) or its bearer JWT.
//
// This runs on every call, so what it learns it keeps: a connection's certificate is read once, on the
// connection's first call, and a token is verified once, on its first call, then answered from a cache
// until it expires. Only a token's first call is asynchronous.
import type { Socket } from "node:net";
import type { PeerCertificate, TLSSocket } from "node:tls";
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload } from "jose";
import { ConfigError } from "../errors/config-error.js";
import { DomainError } from "../errors/errors.js";
import { JwtKeys } from "./jwt-keys.js";
import type { AuthenticationConfig, JwtConfig } from "./authentication-config.js";
import { ANONYMOUS, type Principal, unfitName } from "./principal.js";

/** What a certificate's URI SAN usually looks like: a scheme and "://". */
const URI_LIKE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** --jwt-max-lifetime's default: a day. */
export const DEFAULT_JWT_MAX_LIFETIME_SECONDS = 86_400;

/** Most verified tokens kept: callers rarely hold more than one or two each, and the oldest go first. */
const MAX_CACHED_TOKENS = 10_000;
/** Longest a verified token is trusted without verifying again, whatever its "exp". */
const MAX_CACHE_MS = 5 * 60_000;
/** Longest piece of a caller's own words (an issuer, a kid) repeated in a message. */
const MAX_ECHO = 100;
const NO_CERTIFICATE = "no client certificate";

/**
 * A connection's principal, kept on its socket. Not a WeakMap keyed by the socket we are given: for HTTP/2,
 * Node's compatibility API hands each request its own Proxy of the session's TLSSocket (req.socket), so such
 * a map would miss on every call. The proxy forwards other properties, this symbol's too, to the TLSSocket
 * itself, so the principal lives (and is collected) with the connection, as a WeakMap entry would.
 */
const PRINCIPAL = Symbol("fencekeeper.principal");

interface CachedToken {
  readonly principal: Principal;
  /** Date.now() past which the token is verified again. */
  readonly until: number;
}

/** When the certificate of a connection's cached principal expires (ms since 1970), kept beside it. */
const NOT_AFTER = Symbol("fencekeeper.notAfter");

type PeerSocket = Partial<Pick<TLSSocket, "authorized" | "authorizationError" | "getPeerCertificate">> & {
  [PRINCIPAL]?: Principal;
  [NOT_AFTER]?: number;
};

export class Authenticator {
  /** False when neither mtls nor jwt is configured: every call is ANONYMOUS. */
  readonly enabled: boolean;
  private keys: JwtKeys | undefined;
  /** Bumped by each reload, so that a verification that began with the old keys is not cached after it. */
  private generation = 0;
  private readonly tokens = new Map<string, CachedToken>();
  /** Tokens being verified: a client that opens many calls at once with a new token pays for one verification. */
  private readonly verifying = new Map<string, Promise<Principal>>();
  /** Metadata of every UNAUTHENTICATED: what the server takes, for a client that picks its credentials. */
  private readonly expected: Record<string, string>;

  private constructor(
    private readonly config: AuthenticationConfig,
    keys: JwtKeys | undefined,
  ) {
    this.enabled = config.mtls || config.jwt !== undefined;
    this.keys = keys;
    const { jwt } = config;
    this.expected = {
      expected: [jwt && "bearer JWT", config.mtls && "client certificate"].filter(Boolean).join(" or "),
      ...(jwt && { issuer: jwt.issuer, audience: jwt.audience }),
    };
  }

  /** Reads and checks the key files; a bad file is a ConfigError naming the file (and the flag --jwt-keys) and what is wrong. */
  static async create(c: AuthenticationConfig): Promise<Authenticator> {
    if (c.jwt) checkJwtConfig(c.jwt);
    return new Authenticator(c, c.jwt && (await JwtKeys.load(c.jwt.keyFiles)));
  }

  /** One line for the start log. */
  describe(): string {
    const { mtls, jwt } = this.config;
    const parts: string[] = [];
    if (mtls) parts.push("client certificates (URI SAN, else subject CN)");
    if (jwt) {
      const n = this.keys?.size ?? 0;
      parts.push(`bearer JWTs from issuer "${jwt.issuer}" for audience "${jwt.audience}" (${n} ${n === 1 ? "key" : "keys"})`);
    }
    return parts.length ? parts.join("; ") : "none: every call is anonymous";
  }

  /** The JWT verification keys in force: their kids (a PEM key has none) and how many; undefined without --jwt-keys. */
  verificationKeys(): { kids: string[]; count: number } | undefined {
    if (!this.keys) return undefined;
    return { kids: this.keys.keys.flatMap((k) => (k.kid === undefined ? [] : [k.kid])), count: this.keys.size };
  }

  /**
   * Re-reads the key files (on SIGHUP); on a bad file keeps the old keys and throws the ConfigError.
   * Verified tokens are forgotten: a key taken out of the files stops its tokens at once, not when they expire.
   */
  async reload(): Promise<void> {
    if (!this.config.jwt) return;
    const keys = await JwtKeys.load(this.config.jwt.keyFiles);
    this.keys = keys;
    this.generation++;
    this.tokens.clear();
    this.verifying.clear();
  }

  /**
   * The caller of one request. `authorization` is the request's Authorization header (undefined if absent),
   * `socket` the request's socket (for HTTP/2, Node's req.socket proxy of the session's TLSSocket; for HTTP/1.1,
   * the TLSSocket; a net.Socket when cleartext). Synchronous except for a token's first call; throws (or
   * rejects with) DomainError("unauthenticated", ..., "UNAUTHENTICATED") when credentials are missing or bad.
   */
  authenticate(authorization: string | undefined, socket: Socket): Principal | Promise<Principal> {
    if (!this.enabled) return ANONYMOUS;
    const { jwt, mtls } = this.config;
    if (jwt && authorization !== undefined) {
      const [scheme, token] = splitAuthorization(authorization);
      // A bearer token decides alone, even beside a good client certificate: a caller that sends a token means
      // it, and answering a bad one with the certificate's identity would act for someone it did not ask for.
      if (scheme.toLowerCase() === "bearer") return this.fromToken(token);
    }
    // Any other Authorization header is not ours to read: with a good certificate the call goes on (a proxy on
    // the way may have wanted the header); without one, the refusal says which scheme we expected instead.
    let certificate: string | undefined;
    if (mtls) {
      const principal = peerPrincipal(socket as PeerSocket);
      if (typeof principal !== "string") return principal;
      if (!jwt) throw this.refuse(`${principal}: this server expects a client certificate signed by its client CA (mutual TLS)`);
      certificate = principal;
    }
    const wanted = `this server expects ${this.wanted()}`;
    if (authorization !== undefined) {
      const [scheme] = splitAuthorization(authorization);
      const named = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/.test(scheme) ? `the "${scheme}" scheme` : "an unknown scheme";
      throw this.refuse(`the Authorization header uses ${named}${certificate ? `, and ${certificate}` : ""}; ${wanted}`);
    }
    // "no client certificate" adds nothing to "no credentials"; a refused one is worth naming.
    const refused = certificate && certificate !== NO_CERTIFICATE ? ` (${certificate})` : "";
    throw this.refuse(`no credentials${refused}: ${wanted}`);
  }

  /** What the server takes, in words: "a bearer token (...) or a client certificate signed by its client CA". */
  private wanted(): string {
    const { jwt, mtls } = this.config;
    const bearer = jwt && `a bearer token (Authorization: Bearer <JWT> from issuer "${jwt.issuer}" for audience "${jwt.audience}")`;
    const certificate = mtls && "a client certificate signed by its client CA";
    return [bearer, certificate].filter(Boolean).join(" or ");
  }

  private fromToken(token: string): Principal | Promise<Principal> {
    const cached = this.tokens.get(token);
    if (cached) {
      if (Date.now() < cached.until) return cached.principal;
      this.tokens.delete(token);
    }
    let pending = this.verifying.get(token);
    if (!pending) {
      const generation = this.generation;
      pending = this.verify(token, generation).finally(() => {
        if (this.generation === generation) this.verifying.delete(token);
      });
      this.verifying.set(token, pending);
    }
    return pending;
  }

  private async verify(token: string, generation: number): Promise<Principal> {
    const jwt = this.config.jwt!;
    const keys = this.keys!;
    if (token === "") throw this.badToken("malformed", "the Authorization header says Bearer but carries no token");
    let header: ReturnType<typeof decodeProtectedHeader>;
    try {
      if (token.split(".").length !== 3) throw new Error("not three parts");
      header = decodeProtectedHeader(token);
    } catch {
      throw this.badToken("malformed", "it is not a signed JWT (three base64url parts: header.payload.signature)");
    }
    const { alg, kid } = header;
    const accepted = [...keys.algorithms].join(", ");
    if (alg === "none") throw this.badToken("algorithm_not_allowed", `it is unsigned ("alg": "none"); this server accepts ${accepted}`);
    if (typeof alg === "string" && /^HS/.test(alg)) {
      throw this.badToken("algorithm_not_allowed", `it is signed with a shared secret (${alg}); this server accepts only public-key signatures: ${accepted}`);
    }
    if (typeof alg !== "string" || !keys.algorithms.has(alg)) {
      throw this.badToken("algorithm_not_allowed", `it is signed with ${echo(alg)}; this server's keys verify ${accepted}`);
    }
    if (kid !== undefined && typeof kid !== "string") throw this.badToken("malformed", 'its header\'s "kid" is not a string');
    const candidates = keys.candidates(alg, kid);
    if (candidates.keys.length === 0) {
      throw this.badToken("unknown_key", `no key with kid ${echo(kid)} among this server's keys; the token is from another issuer, or the server has not been given its issuer's new key`);
    }
    for (const key of candidates.keys) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key, {
          algorithms: [alg],
          issuer: jwt.issuer,
          audience: jwt.audience,
          clockTolerance: jwt.clockToleranceSeconds,
          requiredClaims: ["exp"],
        }));
      } catch (err) {
        // Signatures are checked before claims: a claim's refusal comes only once the signature verified.
        if (err instanceof errors.JWSSignatureVerificationFailed) continue;
        throw this.refuseClaims(err);
      }
      return this.admit(token, payload, generation);
    }
    const which = !candidates.kidKnown
      ? `any of this server's ${alg} keys (none has kid ${echo(kid)})`
      : kid === undefined
        ? `this server's ${alg} keys`
        : `this server's ${alg} key with kid ${echo(kid)}`;
    throw this.badToken("bad_signature", `its signature does not verify with ${which}; it was signed by a key this server does not have`);
  }

  /** The principal of a verified token, cached until the token expires. */
  private admit(token: string, payload: JWTPayload, generation: number): Principal {
    const jwt = this.config.jwt!;
    this.checkLifetime(payload);
    const name = payload[jwt.principalClaim];
    if (typeof name !== "string" || name === "") {
      throw this.badToken("missing_claim", `it has no "${jwt.principalClaim}" claim naming the caller (a non-empty string)`);
    }
    const unfit = unfitName(name);
    if (unfit) throw this.badToken("malformed", `its "${jwt.principalClaim}" claim holds ${unfit}`);
    if (!jwt.uriSubjects && URI_LIKE.test(name)) {
      throw this.badToken(
        "uri_subject",
        `its "${jwt.principalClaim}" claim ${echo(name)} is a URI, the kind of name a client certificate carries; this server keeps the two apart (--jwt-uri-subjects off), so a token cannot act as a certificate's identity`,
      );
    }
    const raw = payload[jwt.groupsClaim];
    const groups = raw === undefined ? [] : typeof raw === "string" ? [raw] : raw;
    if (!Array.isArray(groups) || !groups.every((g) => typeof g === "string")) {
      throw this.badToken("malformed", `its "${jwt.groupsClaim}" claim is neither a string nor an array of strings`);
    }
    const principal: Principal = Object.freeze({ name, via: "jwt", groups: Object.freeze([...groups]), claims: deepFreeze(payload) });
    const now = Date.now();
    const until = Math.min((payload.exp as number) * 1000, now + MAX_CACHE_MS);
    if (until > now && generation === this.generation) {
      if (this.tokens.size >= MAX_CACHED_TOKENS) this.tokens.delete(this.tokens.keys().next().value!);
      this.tokens.set(token, { principal, until });
    }
    return principal;
  }

  /** Refuses a token valid for longer than --jwt-max-lifetime, counted from "iat", or from now without one. */
  private checkLifetime(payload: JWTPayload): void {
    const jwt = this.config.jwt!;
    const max = jwt.maxLifetimeSeconds ?? DEFAULT_JWT_MAX_LIFETIME_SECONDS;
    const exp = payload.exp as number;
    const from = typeof payload.iat === "number" ? payload.iat : Date.now() / 1000;
    const lifetime = exp - from;
    if (lifetime <= max) return;
    const counted = typeof payload.iat === "number" ? `from its "iat" (${time(payload.iat)})` : `from now (it has no "iat")`;
    throw this.badToken(
      "lifetime_too_long",
      `it is valid until ${time(exp)}, ${duration(lifetime)} ${counted}; this server accepts tokens valid for at most ${duration(max)} (--jwt-max-lifetime); ask issuer "${jwt.issuer}" for a shorter-lived token`,
    );
  }

  /** A refusal by jose after the signature verified: a claim the server requires, in words. */
  private refuseClaims(err: unknown): DomainError {
    const jwt = this.config.jwt!;
    const tolerance = `${jwt.clockToleranceSeconds} s clock tolerance`;
    if (err instanceof errors.JWTExpired) {
      return this.badToken("expired", `it expired at ${time(err.payload.exp)} (${tolerance}); get a new token from issuer "${jwt.issuer}"`);
    }
    if (err instanceof errors.JWTClaimValidationFailed) {
      const { claim, reason, payload } = err;
      if (reason === "missing") {
        const why = claim === "exp" ? "this server accepts only tokens that expire" : `this server requires "${claim}"`;
        return this.badToken("missing_claim", `it has no "${claim}" claim; ${why}`);
      }
      if (reason === "invalid") return this.badToken("malformed", `its "${claim}" claim is not a number of seconds since 1970`);
      if (claim === "nbf") {
        return this.badToken("not_yet_valid", `it is not valid before ${time(payload.nbf)} (${tolerance}); if it was just issued, the issuer's clock or this server's is off`);
      }
      if (claim === "iss") return this.badToken("wrong_issuer", `it is from issuer ${echo(payload.iss)}, expected "${jwt.issuer}"`);
      if (claim === "aud") {
        const aud = Array.isArray(payload.aud) ? payload.aud.map(echo).join(", ") : echo(payload.aud);
        return this.badToken("wrong_audience", `it is for audience ${aud}, not "${jwt.audience}"; ask issuer "${jwt.issuer}" for a token for audience "${jwt.audience}"`);
      }
    }
    if (err instanceof errors.JOSEError) return this.badToken("malformed", `it is not a valid JWT (${err.message})`);
    return this.badToken("malformed", `it cannot be verified (${err instanceof Error ? err.message : String(err)})`);
  }

  private badToken(problem: string, why: string): DomainError {
    return new DomainError("unauthenticated", `bearer token refused: ${why}`, "UNAUTHENTICATED", { ...this.expected, problem });
  }

  private refuse(message: string): DomainError {
    return new DomainError("unauthenticated", message, "UNAUTHENTICATED", { ...this.expected });
  }

  /**
   * When the credentials `principal` was established from expire (ms since 1970): a JWT's "exp", a client
   * certificate's notAfter; undefined for anonymous callers. Open streams end then (open-streams.ts). The
   * clock tolerance admits a call that arrives just after "exp"; it does not lengthen a stream's life.
   */
  expiresAt(principal: Principal, socket: Socket): number | undefined {
    if (principal.via === "jwt") {
      const exp = principal.claims.exp;
      return typeof exp === "number" ? exp * 1000 : undefined;
    }
    if (principal.via === "mtls") {
      const notAfter = (socket as PeerSocket)[NOT_AFTER];
      return notAfter !== undefined && Number.isFinite(notAfter) ? notAfter : undefined;
    }
    return undefined;
  }
}

/** ["Bearer", "<token>"] from "Bearer <token>"; the scheme is compared without case (RFC 9110). */
function splitAuthorization(header: string): [scheme: string, credentials: string] {
  const trimmed = header.trim();
  const space = trimmed.search(/\s/);
  return space < 0 ? [trimmed, ""] : [trimmed.slice(0, space), trimmed.slice(space).trim()];
}

/**
 * The principal of a connection's verified client certificate, or why there is none (a string). Only a
 * certificate the TLS handshake verified against the client CA counts (socket.authorized).
 */
function peerPrincipal(socket: PeerSocket): Principal | string {
  const cached = socket[PRINCIPAL];
  if (cached) {
    // The handshake checked the certificate's dates once; a connection may outlive them.
    const notAfter = socket[NOT_AFTER]!;
    return Date.now() < notAfter ? cached : `the client certificate expired at ${new Date(notAfter).toISOString()}; reconnect with a fresh one`;
  }
  if (typeof socket.getPeerCertificate !== "function") return "no client certificate (the connection is not TLS)";
  if (socket.authorized !== true) {
    // Node reports a missing certificate as an authorization error too (UNABLE_TO_GET_ISSUER_CERT): tell them apart.
    const presented = Object.keys(socket.getPeerCertificate()).length > 0;
    return presented ? `the client certificate was not accepted (${String(socket.authorizationError)})` : NO_CERTIFICATE;
  }
  const name = certificateName(socket.getPeerCertificate());
  if (!name.ok) return name.why;
  const principal: Principal = Object.freeze({ name: name.name, via: "mtls", groups: Object.freeze([]), claims: Object.freeze({}) });
  socket[PRINCIPAL] = principal;
  socket[NOT_AFTER] = Date.parse(socket.getPeerCertificate().valid_to) || Infinity;
  return principal;
}

/** A certificate's name: its first URI SAN (a SPIFFE id), else its subject CN. */
function certificateName(cert: PeerCertificate): { ok: true; name: string } | { ok: false; why: string } {
  const uri = altNames(cert.subjectaltname).find((n) => n.type === "URI")?.value;
  if (uri) {
    const unfit = unfitName(uri);
    return unfit ? { ok: false, why: `the client certificate's URI SAN holds ${unfit}` } : { ok: true, name: uri };
  }
  // Node gives an attribute that occurs more than once as an array.
  const cn = cert.subject?.CN as string | string[] | undefined;
  if (Array.isArray(cn)) {
    // Which of several CNs names the caller is a guess; an identity is not guessed.
    return { ok: false, why: `the client certificate has ${cn.length} subject CNs and no URI SAN, so it names no one caller` };
  }
  if (cn) {
    const unfit = unfitName(cn);
    return unfit ? { ok: false, why: `the client certificate's subject CN holds ${unfit}` } : { ok: true, name: cn };
  }
  return { ok: false, why: "the client certificate names no one: it has neither a URI SAN nor a subject CN" };
}

/**
 * The entries of Node's subjectaltname: "DNS:a, URI:spiffe://x/y, IP Address:127.0.0.1". Node writes a
 * value with a comma, quote or other unsafe character as a JSON string, so a value cannot fake an entry.
 */
export function altNames(san: string | undefined): { type: string; value: string }[] {
  const names: { type: string; value: string }[] = [];
  let i = 0;
  while (san && i < san.length) {
    const colon = san.indexOf(":", i);
    if (colon < 0) break;
    const type = san.slice(i, colon);
    let value: string;
    let end: number;
    if (san[colon + 1] === '"') {
      const m = /^"(?:[^"\\]|\\.)*"/.exec(san.slice(colon + 1));
      if (!m) break;
      try {
        value = JSON.parse(m[0]) as string;
      } catch {
        break;
      }
      end = colon + 1 + m[0].length;
    } else {
      const comma = san.indexOf(", ", colon + 1);
      end = comma < 0 ? san.length : comma;
      value = san.slice(colon + 1, end);
    }
    names.push({ type, value });
    i = san.startsWith(", ", end) ? end + 2 : san.length;
  }
  return names;
}

function checkJwtConfig(jwt: JwtConfig): void {
  if (!jwt.issuer) throw new ConfigError("--jwt-issuer is required with --jwt-keys: tokens are accepted from one issuer only");
  if (!jwt.audience) throw new ConfigError("--jwt-audience is required with --jwt-keys: tokens must be meant for this server");
  if (!jwt.principalClaim) throw new ConfigError('--jwt-principal-claim must name a claim (e.g. "sub")');
  if (!jwt.groupsClaim) throw new ConfigError('--jwt-groups-claim must name a claim (e.g. "groups")');
  const t = jwt.clockToleranceSeconds;
  if (!Number.isFinite(t) || t < 0) throw new ConfigError(`--jwt-clock-tolerance must be a number of seconds, 0 or more, got ${t}`);
  const m = jwt.maxLifetimeSeconds;
  if (m !== undefined && (!Number.isFinite(m) || m <= 0)) throw new ConfigError(`--jwt-max-lifetime must be a number of seconds above 0, got ${m}`);
}

/** A value from the caller's token, quoted and cut short: it is the caller's words, not ours. */
function echo(v: unknown): string {
  const s = typeof v === "string" ? v : v === undefined ? "(none)" : JSON.stringify(v) ?? String(v);
  if (v === undefined) return s;
  return JSON.stringify(s.length > MAX_ECHO ? `${s.slice(0, MAX_ECHO)}...` : s);
}

/** Seconds in words: "90 s", "2 h", "400 days". */
function duration(seconds: number): string {
  if (seconds >= 86_400) {
    const days = Math.floor(seconds / 86_400);
    return days === 1 && seconds % 86_400 === 0 ? "1 day" : days === 1 ? `${Math.floor(seconds / 3600)} h` : `${days} days`;
  }
  if (seconds >= 2 * 3600) return `${Math.floor(seconds / 3600)} h`;
  if (seconds >= 120) return `${Math.floor(seconds / 60)} min`;
  return `${Math.round(seconds)} s`;
}

function time(seconds: unknown): string {
  return typeof seconds === "number" && Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : String(seconds);
}

/** Claims shared by every call with the token: no policy may change them for the next. */
function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const child of Object.values(v)) deepFreeze(child);
  }
  return v;
}
