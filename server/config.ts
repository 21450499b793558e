// Configuration from flags and environment variables (flags win), checked at start so that a bad value
// stops the server with its name and what is allowed. docs/configuration.md lists every setting.
import { closeSync, constants as fsConstants, openSync, readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { X509Certificate, createPrivateKey, type KeyObject } from "node:crypto";
import { createSecureContext } from "node:tls";
import { Command, InvalidArgumentError, Option } from "commander";
import type { AuthenticationConfig, JwtConfig } from "./auth/authentication-config.js";
import { DEFAULT_MAX_BYTES_PER_LEASE, DEFAULT_MAX_BYTES_PER_RESOURCE, DEFAULT_PREEMPTION_INTERVAL_MS, MIN_TTL_SECONDS, TXN_EXTRA_OPS, TXN_EXTRA_OPS_WITH_QUOTA } from "./validation/limits.js";
import { ConfigError } from "./errors/config-error.js";
import { isLoopback, type HostPort } from "./rpc/transport.js";
import { EMBEDDED_ETCD_MAX_REQUEST_BYTES, EMBEDDED_ETCD_QUOTA_BACKEND_BYTES } from "./etcd/embedded.js";
import { defaultHistoryBytesPerSecond } from "./budgets/history-rate.js";
import { answerBudget, CALLER_BUFFER_STREAMS, DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_STREAM_BUFFER_BYTES, MIN_ANSWER_BYTES, type AnswerBudget } from "./answers/budget.js";

/** etcd's own default --max-request-bytes. */
const ETCD_DEFAULT_MAX_REQUEST_BYTES = 1.5 * 1024 * 1024;

/** A PEM file as read at start: where it came from, and its bytes. */
export interface PemFile {
  path: string;
  pem: Buffer;
}

/** The port's TLS as read at start (rpc/transport.ts takes its bytes). */
export interface ServerTls {
  cert: PemFile;
  key: PemFile;
  /** Set: clients must present a certificate signed by this CA (mutual TLS). */
  clientCa?: PemFile;
}

export interface EtcdTls {
  ca?: PemFile;
  cert?: PemFile;
  key?: PemFile;
}

export interface Config {
  listen: HostPort;
  /** Empty: start the embedded single-node etcd. */
  etcdEndpoints: string[];
  dataDir: string;
  embeddedEtcdPorts: { client: number; peer: number };
  prefix: string;
  maxTtlSeconds: number;
  maxLockDelaySeconds: number;
  maxTxnOps: number;
  /** What etcd accepts in one request: its --max-txn-ops and --max-request-bytes. */
  etcdMaxTxnOps: number;
  etcdMaxRequestBytes: number;
  idempotencyTtlSeconds: number;
  etcdTimeoutMs: number;
  shutdownGraceMs: number;
  logLevel: string;
  /** Undefined: no metrics endpoint. */
  metricsListen?: HostPort;
  /** False when metricsListen is the default: then a busy port leaves the server without metrics, with a warning. */
  metricsListenGiven: boolean;
  /** Where the read-only web console is served (server/console/); undefined: nowhere. */
  consoleListen?: HostPort;
  reflection: boolean;
  /** Unary calls decoded by the server's own short path (server/rpc/unary-fast-path.ts) rather than connect's. */
  unaryFastPath: boolean;
  healthProbeIntervalMs: number;
  /** Undefined: cleartext (HTTP/2 with prior knowledge, and HTTP/1.1). */
  tls?: ServerTls;
  /** Undefined: plain http:// endpoints, or https:// with the system's CAs and no client certificate. */
  etcdTls?: EtcdTls;
  /** Who may call: client certificates (with --tls-client-ca) and bearer JWTs; neither: nobody is asked. */
  authentication: AuthenticationConfig;
  /** The authorization policy file; undefined: every authenticated caller may do everything. */
  policyFile?: string;
  /** Serve beyond loopback without authentication (told explicitly). */
  allowUnauthenticated: boolean;
  /** Without authentication, the names besides IP addresses, localhost and the listen host that requests may give as their Host ("*": any). */
  allowedHosts: string[];
  /** The Ed25519 key every replica signs tokens with; undefined: one kept in etcd. */
  tokenSigningKey?: KeyObject;
  connections: { handshakeTimeoutMs: number; idleTimeoutMs: number; maxConcurrentStreams: number; requestReadTimeoutMs: number };
  /** etcd history compaction: every intervalMs (0: never), keeping the last `retention` revisions. */
  compaction: { intervalMs: number; retention: number };
  /** Bytes (keys and values) one resource's store entries may take in etcd; 0: no quota. */
  maxBytesPerResource: number;
  /** Bytes of store entries one principal may pay for, over all resources (with authentication and the quota on). */
  maxStoreBytesPerCaller: number;
  /** What one answer may weigh, and what one Observe stream keeps for a reader that falls behind (answers/budget.ts). */
  answers: AnswerBudget;
  /** Per caller (a principal; without authentication, a client address), on this replica. */
  callerCaps: { streams: number; waiters: number };
  maxLeasesPerCaller: number;
  /** The ledger's budgets (docs/budgets.md): bytes per lease, history bytes a second per caller, etcd's quota they are sized from. */
  maxBytesPerLease: number;
  historyBytesPerSecond: number;
  etcdQuotaBytes: number;
  preemptionIntervalMs: number;
  /** KeepAlive messages one stream may send per second. */
  maxStreamMessagesPerSecond: number;
  /** Traces go to this OTLP/HTTP endpoint, their spans batched for delayMs; a sampleRatio of the traces
   * the server starts is kept (a caller's traceparent decides for its own); undefined: no tracing. */
  otlp?: { endpoint: string; delayMs: number; sampleRatio: number };
  /** Audit lines go to this file ("-": standard output); undefined: no audit trail (docs/audit.md). */
  auditLog?: string;
  /** This replica's name in audit lines: the host name (a pod's name) unless given. */
  replica: string;
}

/** A setting whose value cannot work with the others; the message names the settings. */
function integer(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return n;
  };
}

function hostPort(name: string, example: string) {
  return (raw: string): HostPort => {
    const m = /^(.*):(\d+)$/.exec(raw.trim());
    const port = m ? Number(m[2]) : NaN;
    if (!m || !m[1] || port > 65535) throw new InvalidArgumentError(`${name} must be host:port (e.g. ${example}), got "${raw}"`);
    return { host: m[1].replace(/^\[(.*)\]$/, "$1"), port };
  };
}

/** "off", as false: commander would turn an undefined value into "". */
function orOff<T>(parse: (raw: string) => T) {
  return (raw: string): T | false => (raw.trim() === "off" ? false : parse(raw));
}

const TRUE = ["true", "on", "yes", "1"];
const FALSE = ["false", "off", "no", "0"];

function boolean(name: string) {
  return (raw: string): boolean => {
    const v = raw.trim().toLowerCase();
    if (TRUE.includes(v)) return true;
    if (FALSE.includes(v)) return false;
    throw new InvalidArgumentError(`${name} must be one of ${[...TRUE, ...FALSE].join(", ")}, got "${raw}"`);
  };
}

function endpoints(raw: string): string[] {
  const list = raw.split(",").map((s) => s.trim()).filter(Boolean);
  for (const e of list) {
    if (!/^https?:\/\/[^/\s]+$/.test(e)) {
      throw new InvalidArgumentError(`etcd endpoints must be comma-separated URLs like http://127.0.0.1:2379, got "${e}"`);
    }
  }
  return list;
}

function prefix(raw: string): string {
  if (!raw.startsWith("/") || !raw.endsWith("/") || raw.length < 2) {
    throw new InvalidArgumentError(`prefix must start and end with "/" (e.g. /fencekeeper/), got "${raw}"`);
  }
  return raw;
}

/** Comma-separated files that must exist; read later by what uses them. */
function files(name: string) {
  return (raw: string): string[] => {
    const list = raw.split(",").map((f) => f.trim()).filter(Boolean);
    if (list.length === 0) throw new InvalidArgumentError(`${name} must name at least one file, got "${raw}"`);
    for (const f of list) {
      try {
        readFileSync(f);
      } catch (err) {
        throw new InvalidArgumentError(`${name}: cannot read "${f}" (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      }
    }
    return list;
  };
}

/** Reads a PEM file at start; what it holds is checked with the settings that go with it. */
function pemFile(name: string) {
  return (raw: string): PemFile => {
    let pem: Buffer;
    try {
      pem = readFileSync(raw);
    } catch (err) {
      throw new InvalidArgumentError(`${name}: cannot read "${raw}" (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    if (!pem.includes("-----BEGIN ")) throw new InvalidArgumentError(`${name}: "${raw}" is not a PEM file`);
    return { path: raw, pem };
  };
}

/** A number from 0 to 1. */
function fraction(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === "" || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError(`${name} must be a number from 0 to 1 (e.g. 0.1), got "${raw}"`);
    return n;
  };
}

/** An http:// or https:// URL. */
function httpUrl(name: string) {
  return (raw: string): string => {
    let u: URL | undefined;
    try {
      u = new URL(raw.trim());
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== "http:" && u.protocol !== "https:")) throw new InvalidArgumentError(`${name} must be an http:// or https:// URL (e.g. http://127.0.0.1:4318), got "${raw}"`);
    return u.toString();
  };
}

/**
 * "-", a file the server can append to, or a FIFO: a path that cannot be opened stops the server now, not
 * its first audit line. A FIFO is not opened here (an open for writing waits for a reader, and this one's
 * close would end the reader's input): the trail opens it without blocking and says when nobody reads it.
 */
function auditLog(raw: string): string {
  if (raw === "-") return raw;
  try {
    if (statSync(raw, { throwIfNoEntry: false })?.isFIFO()) return raw;
    closeSync(openSync(raw, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NONBLOCK | fsConstants.O_NOCTTY, 0o640));
  } catch (err) {
    throw new InvalidArgumentError(`audit-log: cannot append to "${raw}" (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  return raw;
}

/** Comma-separated host names (no ports, no schemes), or "*". */
function hostNames(raw: string): string[] {
  const list = raw.split(",").map((s) => s.trim()).filter(Boolean);
  for (const n of list) {
    if (n !== "*" && !/^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/.test(n)) {
      throw new InvalidArgumentError(`allowed-hosts must be comma-separated host names without ports (e.g. fencekeeper.prod.svc,fencekeeper), or *, got "${n}"`);
    }
  }
  return list;
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** The default metrics address, told apart from a given one by identity. */
const DEFAULT_METRICS_LISTEN: HostPort = Object.freeze({ host: "127.0.0.1", port: 9464 });

/** The options of `serve`, shared by the server's own entry point and the CLI. */
export function serveOptions(cmd: Command): Command {
  const opt = (flags: string, description: string, env: string, parse?: (raw: string) => unknown, dflt?: unknown, shown?: string) => {
    const o = new Option(flags, description).env(env);
    if (parse) o.argParser(parse);
    if (dflt !== undefined) o.default(dflt, shown);
    cmd.addOption(o);
  };
  opt("--listen <host:port>", "address to serve gRPC, gRPC-Web and Connect on", "FENCEKEEPER_LISTEN", hostPort("listen", "127.0.0.1:50051"), hostPort("listen", "")("127.0.0.1:50051"), "127.0.0.1:50051");
  opt("--etcd <urls>", "etcd endpoints, comma-separated; unset: start an embedded single-node etcd", "FENCEKEEPER_ETCD_ENDPOINTS", endpoints, []);
  opt("--data-dir <dir>", "where the embedded etcd keeps its data", "FENCEKEEPER_DATA_DIR", undefined, ".fencekeeper");
  opt("--embedded-etcd-port <port>", "client port of the embedded etcd (its peer port is the next one; 0: free ports)", "FENCEKEEPER_EMBEDDED_ETCD_PORT", integer("embedded-etcd-port", 0, 65534), 52379);
  opt("--prefix <prefix>", "etcd key prefix under which all state lives", "FENCEKEEPER_PREFIX", prefix, "/fencekeeper/");
  opt("--max-ttl <seconds>", "longest lease TTL a client may ask for", "FENCEKEEPER_MAX_TTL", integer("max-ttl", MIN_TTL_SECONDS, 86400), 300);
  opt("--max-lock-delay <seconds>", "longest lock-delay an acquisition may ask for (0: none may)", "FENCEKEEPER_MAX_LOCK_DELAY", integer("max-lock-delay", 0, 86400), 60);
  opt("--max-txn-ops <n>", "most operations in one Txn (at most --etcd-max-txn-ops minus 6, or minus 2 with --max-bytes-per-resource 0)", "FENCEKEEPER_MAX_TXN_OPS", integer("max-txn-ops", 1, 10_000), 64);
  opt("--etcd-max-txn-ops <n>", "etcd's --max-txn-ops: operations etcd accepts in one transaction", "FENCEKEEPER_ETCD_MAX_TXN_OPS", integer("etcd-max-txn-ops", 8, 100_000), 128);
  opt(
    "--etcd-max-request-bytes <n>",
    "etcd's --max-request-bytes: the largest request etcd accepts (default 1.5 MiB; the embedded etcd takes 4 MiB)",
    "FENCEKEEPER_ETCD_MAX_REQUEST_BYTES",
    integer("etcd-max-request-bytes", 1_310_720, 2 ** 31 - 1),
  );
  opt("--idempotency-ttl <seconds>", "how long idempotency records are kept", "FENCEKEEPER_IDEMPOTENCY_TTL", integer("idempotency-ttl", 60, 30 * 86400), 86400);
  opt("--etcd-timeout <ms>", "deadline of each etcd call, and of each health probe of etcd", "FENCEKEEPER_ETCD_TIMEOUT", integer("etcd-timeout", 100, 60_000), 5000);
  opt("--shutdown-grace <ms>", "how long unary calls in flight may finish at shutdown", "FENCEKEEPER_SHUTDOWN_GRACE", integer("shutdown-grace", 0, 600_000), 10_000);
  cmd.addOption(new Option("--log-level <level>", "log level").env("FENCEKEEPER_LOG_LEVEL").choices(LOG_LEVELS).default("info"));
  opt(
    "--metrics-listen <host:port|off>",
    "address of the Prometheus endpoint (GET /metrics); port 0 picks a free one; off: none",
    "FENCEKEEPER_METRICS_LISTEN",
    orOff(hostPort("metrics-listen", "127.0.0.1:9464")),
    DEFAULT_METRICS_LISTEN,
    "127.0.0.1:9464",
  );
  opt(
    "--console-listen <host:port|off>",
    "address of the read-only web console (who holds what, live); port 0 picks a free one; off: none",
    "FENCEKEEPER_CONSOLE_LISTEN",
    orOff(hostPort("console-listen", "127.0.0.1:8080")),
    false,
    "off",
  );
  opt("--reflection <on|off>", "serve gRPC server reflection (v1 and v1alpha)", "FENCEKEEPER_REFLECTION", boolean("reflection"), true, "on");
  opt("--unary-fast-path <on|off>", "serve unary calls on the server's short path (off: all through connect-node, for comparison)", "FENCEKEEPER_UNARY_FAST_PATH", boolean("unary-fast-path"), true, "on");
  opt("--health-probe-interval <ms>", "how often etcd is probed for the health service", "FENCEKEEPER_HEALTH_PROBE_INTERVAL", integer("health-probe-interval", 100, 60_000), 2000);
  opt("--tls-cert <file>", "PEM certificate (chain) to serve TLS with; unset: cleartext", "FENCEKEEPER_TLS_CERT", pemFile("tls-cert"));
  opt("--tls-key <file>", "PEM private key of --tls-cert", "FENCEKEEPER_TLS_KEY", pemFile("tls-key"));
  opt("--tls-client-ca <file>", "PEM CA that client certificates must chain to (mutual TLS)", "FENCEKEEPER_TLS_CLIENT_CA", pemFile("tls-client-ca"));
  opt("--jwt-keys <files>", "bearer JWTs authenticate callers: comma-separated files of verification keys (PEM public keys, JWKs or JWKS)", "FENCEKEEPER_JWT_KEYS", files("jwt-keys"));
  opt("--jwt-issuer <iss>", "the issuer (iss) every JWT must name; needed with --jwt-keys", "FENCEKEEPER_JWT_ISSUER");
  opt("--jwt-audience <aud>", "the audience (aud) every JWT must include; needed with --jwt-keys", "FENCEKEEPER_JWT_AUDIENCE");
  opt("--jwt-principal-claim <claim>", "the JWT claim that names the caller", "FENCEKEEPER_JWT_PRINCIPAL_CLAIM", undefined, "sub");
  opt("--jwt-groups-claim <claim>", "the JWT claim that lists the caller's groups, for the policy", "FENCEKEEPER_JWT_GROUPS_CLAIM", undefined, "groups");
  opt("--jwt-uri-subjects <on|off>", "accept JWTs whose principal looks like a URI (scheme://), sharing the namespace of certificates' URI SANs", "FENCEKEEPER_JWT_URI_SUBJECTS", boolean("jwt-uri-subjects"), false, "off");
  opt("--jwt-max-lifetime <seconds>", "longest a JWT may be valid (exp minus iat, or minus now without iat); longer-lived tokens are refused", "FENCEKEEPER_JWT_MAX_LIFETIME", integer("jwt-max-lifetime", 60, 366 * 86400), 86400);
  opt("--policy <file>", "authorization policy (JSON, docs/authorization.md); reloaded on SIGHUP and when the file changes; unset: authenticated callers may do everything", "FENCEKEEPER_POLICY");
  opt("--handshake-timeout <ms>", "how long a new connection has to send its TLS handshake, HTTP/2 preface or HTTP/1.1 request headers", "FENCEKEEPER_HANDSHAKE_TIMEOUT", integer("handshake-timeout", 100, 600_000), 10_000);
  opt("--request-read-timeout <ms>", "how long a request (a unary call's, or a server stream's first message) has to arrive whole after its headers; cut after", "FENCEKEEPER_REQUEST_READ_TIMEOUT", integer("request-read-timeout", 100, 600_000), 10_000);
  opt("--idle-timeout <ms>", "an HTTP/2 connection with no open stream and no traffic for this long is closed", "FENCEKEEPER_IDLE_TIMEOUT", integer("idle-timeout", 1000, 86_400_000), 300_000);
  opt("--max-concurrent-streams <n>", "streams one HTTP/2 connection may have open at once", "FENCEKEEPER_MAX_CONCURRENT_STREAMS", integer("max-concurrent-streams", 1, 1_000_000), 1000);
  opt("--max-streams-per-caller <n>", "KeepAlive and Observe streams one caller may have open on this replica", "FENCEKEEPER_MAX_STREAMS_PER_CALLER", integer("max-streams-per-caller", 1, 1_000_000), 1000);
  opt("--max-waiters-per-caller <n>", "Acquire calls one caller may have waiting on this replica", "FENCEKEEPER_MAX_WAITERS_PER_CALLER", integer("max-waiters-per-caller", 1, 10_000_000), 10_000);
  opt("--max-leases-per-caller <n>", "leases and sessions one principal may hold at once, across replicas (with authentication)", "FENCEKEEPER_MAX_LEASES_PER_CALLER", integer("max-leases-per-caller", 1, 100_000_000), 100_000);
  opt("--max-bytes-per-lease <bytes>", "bytes the acquisitions of one lease or session may store in etcd (values, labels, records; docs/budgets.md)", "FENCEKEEPER_MAX_BYTES_PER_LEASE", integer("max-bytes-per-lease", 4096, Number.MAX_SAFE_INTEGER), DEFAULT_MAX_BYTES_PER_LEASE);
  opt("--max-history-bytes-per-second <bytes>", "bytes one caller may write into etcd's history a second on this replica, every put counting (0: none); unset: from --etcd-quota-bytes and --compaction-interval (docs/budgets.md)", "FENCEKEEPER_MAX_HISTORY_BYTES_PER_SECOND", integer("max-history-bytes-per-second", 0, Number.MAX_SAFE_INTEGER));
  opt("--etcd-quota-bytes <bytes>", "etcd's --quota-backend-bytes, as the budgets' defaults are sized from it (the embedded etcd runs with it)", "FENCEKEEPER_ETCD_QUOTA_BYTES", integer("etcd-quota-bytes", 16 * 1024 * 1024, Number.MAX_SAFE_INTEGER), EMBEDDED_ETCD_QUOTA_BACKEND_BYTES);
  opt("--preemption-interval <ms>", "shortest time between two preemptions of one resource on this replica (0: none; docs/preemption.md)", "FENCEKEEPER_PREEMPTION_INTERVAL", integer("preemption-interval", 0, 3_600_000), DEFAULT_PREEMPTION_INTERVAL_MS);
  opt("--max-stream-messages-per-second <n>", "KeepAlive messages one caller may send per second over all its streams, bursts of twice that (each may renew up to 10,000 leases); a caller that sends faster is read more slowly, not cut off", "FENCEKEEPER_MAX_STREAM_MESSAGES_PER_SECOND", integer("max-stream-messages-per-second", 1, 1_000_000), 5000);
  opt("--token-signing-key <file>", "PEM Ed25519 private key that signs tokens, the same for every replica; unset: a key kept in etcd", "FENCEKEEPER_TOKEN_SIGNING_KEY", pemFile("token-signing-key"));
  opt("--allow-unauthenticated <on|off>", "serve beyond loopback without authentication (e.g. behind a mesh that authenticates)", "FENCEKEEPER_ALLOW_UNAUTHENTICATED", boolean("allow-unauthenticated"), false, "off");
  opt(
    "--allowed-hosts <names>",
    "without authentication, the names (comma-separated) besides IP addresses, localhost and the --listen host that a request may name in its Host header; others are refused against DNS rebinding (*: any name)",
    "FENCEKEEPER_ALLOWED_HOSTS",
    hostNames,
    [],
  );
  opt("--compaction-interval <ms>", "how often the server compacts etcd's history (0: never; then compact etcd otherwise)", "FENCEKEEPER_COMPACTION_INTERVAL", integer("compaction-interval", 0, 86_400_000), 5000);
  opt("--compaction-retention <revisions>", "revisions of etcd's history kept by compaction (page tokens and watches older than this fail)", "FENCEKEEPER_COMPACTION_RETENTION", integer("compaction-retention", 0, 1_000_000_000), 1000);
  opt("--max-answer-bytes <bytes>", "bytes (protobuf) one answer may take: ListResources, Describe and Range pages and Observe messages end there (at least one item each)", "FENCEKEEPER_MAX_ANSWER_BYTES", integer("max-answer-bytes", MIN_ANSWER_BYTES, 3 * 1024 * 1024), DEFAULT_MAX_ANSWER_BYTES);
  opt("--max-stream-buffer-bytes <bytes>", `bytes of messages one Observe stream keeps for a reader that has not taken them (a caller's streams together: ${CALLER_BUFFER_STREAMS} times that); past it, its reader is told it missed changes`, "FENCEKEEPER_MAX_STREAM_BUFFER_BYTES", integer("max-stream-buffer-bytes", MIN_ANSWER_BYTES, 256 * 1024 * 1024), DEFAULT_MAX_STREAM_BUFFER_BYTES);
  opt("--max-bytes-per-resource <bytes>", "bytes (keys and values) the store entries of one resource may take (0: no quota)", "FENCEKEEPER_MAX_BYTES_PER_RESOURCE", integer("max-bytes-per-resource", 0, Number.MAX_SAFE_INTEGER), DEFAULT_MAX_BYTES_PER_RESOURCE);
  opt("--max-store-bytes-per-caller <bytes>", "bytes (keys and values) of the store entries one principal may pay for over all resources, with authentication and --max-bytes-per-resource on (0: none); unset: a sixteenth of --etcd-quota-bytes (docs/budgets.md)", "FENCEKEEPER_MAX_STORE_BYTES_PER_CALLER", integer("max-store-bytes-per-caller", 0, Number.MAX_SAFE_INTEGER));
  opt("--etcd-ca <file>", "PEM CA to trust for https:// etcd endpoints instead of the system's", "FENCEKEEPER_ETCD_CA", pemFile("etcd-ca"));
  opt("--etcd-cert <file>", "PEM client certificate for etcd", "FENCEKEEPER_ETCD_CERT", pemFile("etcd-cert"));
  opt("--etcd-key <file>", "PEM private key of --etcd-cert", "FENCEKEEPER_ETCD_KEY", pemFile("etcd-key"));
  opt("--otlp-endpoint <url>", "send traces to this OpenTelemetry collector over OTLP/HTTP (protobuf), e.g. http://127.0.0.1:4318; unset: no tracing", "FENCEKEEPER_OTLP_ENDPOINT", httpUrl("otlp-endpoint"));
  opt("--otlp-batch-delay <ms>", "how long finished spans wait to be sent together", "FENCEKEEPER_OTLP_BATCH_DELAY", integer("otlp-batch-delay", 1, 600_000), 5000);
  opt("--otlp-sample-ratio <ratio>", "the share of the traces the server starts that are recorded, 0 to 1 (a caller's traceparent decides for its own)", "FENCEKEEPER_OTLP_SAMPLE_RATIO", fraction("otlp-sample-ratio"), 1);
  opt("--audit-log <file|->", "append one JSON line per ownership decision (granted, released, refused, ...) to this file, or - for standard output; unset: no audit trail (docs/audit.md)", "FENCEKEEPER_AUDIT_LOG", auditLog);
  opt("--replica <name>", "this replica's name in the audit trail", "FENCEKEEPER_REPLICA", undefined, hostname(), "the host name");
  return cmd;
}

/** The configuration from parsed options; throws ConfigError when settings do not fit together. */
export function toConfig(o: Record<string, unknown>): Config {
  const port = o.embeddedEtcdPort as number;
  const config: Config = {
    listen: o.listen as HostPort,
    etcdEndpoints: o.etcd as string[],
    dataDir: o.dataDir as string,
    embeddedEtcdPorts: { client: port, peer: port === 0 ? 0 : port + 1 },
    prefix: o.prefix as string,
    maxTtlSeconds: o.maxTtl as number,
    maxLockDelaySeconds: o.maxLockDelay as number,
    maxTxnOps: o.maxTxnOps as number,
    etcdMaxTxnOps: o.etcdMaxTxnOps as number,
    etcdMaxRequestBytes: (o.etcdMaxRequestBytes as number | undefined) ?? ((o.etcd as string[]).length === 0 ? EMBEDDED_ETCD_MAX_REQUEST_BYTES : ETCD_DEFAULT_MAX_REQUEST_BYTES),
    idempotencyTtlSeconds: o.idempotencyTtl as number,
    etcdTimeoutMs: o.etcdTimeout as number,
    shutdownGraceMs: o.shutdownGrace as number,
    logLevel: o.logLevel as string,
    metricsListen: (o.metricsListen as HostPort | false) || undefined,
    metricsListenGiven: o.metricsListen !== DEFAULT_METRICS_LISTEN,
    consoleListen: (o.consoleListen as HostPort | false) || undefined,
    reflection: o.reflection as boolean,
    unaryFastPath: o.unaryFastPath as boolean,
    healthProbeIntervalMs: o.healthProbeInterval as number,
    tls: serverTls(o.tlsCert as PemFile | undefined, o.tlsKey as PemFile | undefined, o.tlsClientCa as PemFile | undefined),
    etcdTls: etcdTls(o.etcd as string[], o.etcdCa as PemFile | undefined, o.etcdCert as PemFile | undefined, o.etcdKey as PemFile | undefined),
    authentication: { mtls: o.tlsClientCa !== undefined, jwt: jwt(o) },
    policyFile: o.policy as string | undefined,
    allowUnauthenticated: o.allowUnauthenticated as boolean,
    allowedHosts: o.allowedHosts as string[],
    tokenSigningKey: signingKey(o.tokenSigningKey as PemFile | undefined),
    connections: {
      handshakeTimeoutMs: o.handshakeTimeout as number,
      idleTimeoutMs: o.idleTimeout as number,
      maxConcurrentStreams: o.maxConcurrentStreams as number,
      requestReadTimeoutMs: o.requestReadTimeout as number,
    },
    callerCaps: { streams: o.maxStreamsPerCaller as number, waiters: o.maxWaitersPerCaller as number },
    maxLeasesPerCaller: o.maxLeasesPerCaller as number,
    maxBytesPerLease: o.maxBytesPerLease as number,
    historyBytesPerSecond:
      (o.maxHistoryBytesPerSecond as number | undefined) ?? defaultHistoryBytesPerSecond(o.etcdQuotaBytes as number, o.compactionInterval as number),
    etcdQuotaBytes: o.etcdQuotaBytes as number,
    preemptionIntervalMs: o.preemptionInterval as number,
    maxStreamMessagesPerSecond: o.maxStreamMessagesPerSecond as number,
    compaction: { intervalMs: o.compactionInterval as number, retention: o.compactionRetention as number },
    maxBytesPerResource: o.maxBytesPerResource as number,
    maxStoreBytesPerCaller: (o.maxStoreBytesPerCaller as number | undefined) ?? Math.floor((o.etcdQuotaBytes as number) / 16),
    answers: answerBudget(o.maxAnswerBytes as number, o.maxStreamBufferBytes as number),
    otlp: o.otlpEndpoint !== undefined ? { endpoint: o.otlpEndpoint as string, delayMs: o.otlpBatchDelay as number, sampleRatio: o.otlpSampleRatio as number } : undefined,
    auditLog: o.auditLog as string | undefined,
    replica: o.replica as string,
  };
  const authenticated = config.authentication.mtls || config.authentication.jwt !== undefined;
  if (config.policyFile !== undefined && !authenticated) {
    throw new ConfigError(
      "--policy (FENCEKEEPER_POLICY) needs authentication, since a policy names principals: set --tls-client-ca (client certificates) or --jwt-keys (bearer JWTs)",
    );
  }
  if (!authenticated && !config.allowUnauthenticated && !isLoopback(config.listen.host)) {
    throw new ConfigError(
      `--listen (FENCEKEEPER_LISTEN) ${config.listen.host}:${config.listen.port} is reachable beyond this machine, and no authentication is set: ` +
        "anyone who reaches the port could renew, release and write under anyone's lease. Set --tls-client-ca or --jwt-keys, " +
        "or --allow-unauthenticated on (FENCEKEEPER_ALLOW_UNAUTHENTICATED) when something in front of the server authenticates callers",
    );
  }
  if (config.consoleListen && !authenticated && !config.allowUnauthenticated && !isLoopback(config.consoleListen.host)) {
    throw new ConfigError(
      `--console-listen (FENCEKEEPER_CONSOLE_LISTEN) ${config.consoleListen.host}:${config.consoleListen.port} is reachable beyond this machine, and no authentication is set: ` +
        "anyone who reaches it would see every holder. Serve it on loopback, set --jwt-keys (the console sends the bearer token you give it), " +
        "or --allow-unauthenticated on when something in front of the server authenticates callers",
    );
  }
  // A Txn commits as one transaction with the fence and the idempotency record beside its operations.
  const ledger = config.maxBytesPerResource > 0 && authenticated && config.maxStoreBytesPerCaller > 0;
  const extra = config.maxBytesPerResource > 0 ? TXN_EXTRA_OPS_WITH_QUOTA + (ledger ? 1 : 0) : TXN_EXTRA_OPS;
  if (config.maxTxnOps + extra > config.etcdMaxTxnOps) {
    const why = ledger
      ? "(with --max-bytes-per-resource and --max-store-bytes-per-caller on, a compare per operation plus the fence's, the idempotency record's, the quota's and the payer's)"
      : config.maxBytesPerResource > 0
        ? "(with --max-bytes-per-resource on, a compare per operation plus the fence's, the idempotency record's and the quota's)"
        : "(the fence and the idempotency record)";
    throw new ConfigError(
      `--max-txn-ops (FENCEKEEPER_MAX_TXN_OPS) ${config.maxTxnOps} does not fit etcd's limit: a Txn commits with ${extra} operations more ` +
        `${why}, and --etcd-max-txn-ops (FENCEKEEPER_ETCD_MAX_TXN_OPS) is ${config.etcdMaxTxnOps}; ` +
        `use at most ${config.etcdMaxTxnOps - extra}, or raise etcd's --max-txn-ops and --etcd-max-txn-ops with it`,
    );
  }
  const { listen, metricsListen } = config;
  if (metricsListen && metricsListen.port !== 0 && metricsListen.port === listen.port && metricsListen.host === listen.host) {
    throw new ConfigError(`--metrics-listen (FENCEKEEPER_METRICS_LISTEN) must differ from --listen (FENCEKEEPER_LISTEN): both are ${listen.host}:${listen.port}`);
  }
  return config;
}

function signingKey(file: PemFile | undefined): KeyObject | undefined {
  if (!file) return undefined;
  let key: KeyObject;
  try {
    key = createPrivateKey(file.pem);
  } catch (err) {
    throw new ConfigError(`--token-signing-key (FENCEKEEPER_TOKEN_SIGNING_KEY): "${file.path}" holds no valid private key (${(err as Error).message})`);
  }
  if (key.asymmetricKeyType !== "ed25519") {
    throw new ConfigError(
      `--token-signing-key (FENCEKEEPER_TOKEN_SIGNING_KEY): "${file.path}" holds a ${key.asymmetricKeyType} key; tokens are signed with Ed25519 (openssl genpkey -algorithm ed25519)`,
    );
  }
  return key;
}

function jwt(o: Record<string, unknown>): JwtConfig | undefined {
  const keyFiles = o.jwtKeys as string[] | undefined;
  const issuer = o.jwtIssuer as string | undefined;
  const audience = o.jwtAudience as string | undefined;
  if (!keyFiles) {
    const stray = [issuer !== undefined && "--jwt-issuer", audience !== undefined && "--jwt-audience"].filter(Boolean);
    if (stray.length) throw new ConfigError(`${stray.join(" and ")} ${stray.length > 1 ? "need" : "needs"} --jwt-keys (FENCEKEEPER_JWT_KEYS): the keys that verify the tokens`);
    return undefined;
  }
  if (!issuer) throw new ConfigError("--jwt-keys needs --jwt-issuer (FENCEKEEPER_JWT_ISSUER): the iss every token must name");
  if (!audience) throw new ConfigError("--jwt-keys needs --jwt-audience (FENCEKEEPER_JWT_AUDIENCE): the aud every token must include, usually this service's name");
  return {
    keyFiles,
    issuer,
    audience,
    principalClaim: o.jwtPrincipalClaim as string,
    groupsClaim: o.jwtGroupsClaim as string,
    clockToleranceSeconds: 30,
    maxLifetimeSeconds: o.jwtMaxLifetime as number,
    uriSubjects: o.jwtUriSubjects as boolean,
  };
}

/** Whether a listen host is reachable from this machine only. */
function serverTls(cert?: PemFile, key?: PemFile, clientCa?: PemFile): ServerTls | undefined {
  if (!cert && !key) {
    if (clientCa) throw new ConfigError("--tls-client-ca (FENCEKEEPER_TLS_CLIENT_CA) needs --tls-cert and --tls-key");
    return undefined;
  }
  if (!cert) throw new ConfigError("--tls-key (FENCEKEEPER_TLS_KEY) needs --tls-cert (FENCEKEEPER_TLS_CERT)");
  if (!key) throw new ConfigError("--tls-cert (FENCEKEEPER_TLS_CERT) needs --tls-key (FENCEKEEPER_TLS_KEY)");
  checkKeyPair("--tls-cert", cert, "--tls-key", key);
  if (clientCa) checkCertificate("--tls-client-ca", clientCa);
  return { cert, key, clientCa };
}

function etcdTls(endpoints: string[], ca?: PemFile, cert?: PemFile, key?: PemFile): EtcdTls | undefined {
  const secure = endpoints.filter((e) => e.startsWith("https://")).length;
  if (secure > 0 && secure < endpoints.length) {
    throw new ConfigError("--etcd (FENCEKEEPER_ETCD_ENDPOINTS) mixes http:// and https:// endpoints; use one scheme for all");
  }
  if (!ca && !cert && !key) return undefined;
  const given = [ca && "--etcd-ca", cert && "--etcd-cert", key && "--etcd-key"].filter(Boolean).join(", ");
  const need = given.includes(",") ? "need" : "needs";
  if (endpoints.length === 0) throw new ConfigError(`${given} ${need} --etcd (FENCEKEEPER_ETCD_ENDPOINTS): the embedded etcd has no TLS`);
  if (secure === 0) throw new ConfigError(`${given} ${need} https:// endpoints in --etcd (FENCEKEEPER_ETCD_ENDPOINTS), got ${endpoints.join(",")}`);
  if (cert && !key) throw new ConfigError("--etcd-cert (FENCEKEEPER_ETCD_CERT) needs --etcd-key (FENCEKEEPER_ETCD_KEY)");
  if (key && !cert) throw new ConfigError("--etcd-key (FENCEKEEPER_ETCD_KEY) needs --etcd-cert (FENCEKEEPER_ETCD_CERT)");
  if (cert && key) checkKeyPair("--etcd-cert", cert, "--etcd-key", key);
  if (ca) checkCertificate("--etcd-ca", ca);
  return { ca, cert, key };
}

function checkCertificate(flag: string, file: PemFile): void {
  try {
    new X509Certificate(file.pem);
  } catch (err) {
    throw new ConfigError(`${flag}: "${file.path}" holds no valid certificate (${(err as Error).message})`);
  }
}

function checkKeyPair(certFlag: string, cert: PemFile, keyFlag: string, key: PemFile): void {
  checkCertificate(certFlag, cert);
  try {
    createPrivateKey(key.pem);
  } catch (err) {
    throw new ConfigError(`${keyFlag}: "${key.path}" holds no valid private key (${(err as Error).message})`);
  }
  try {
    createSecureContext({ cert: cert.pem, key: key.pem });
  } catch (err) {
    throw new ConfigError(`${keyFlag} "${key.path}" is not the key of ${certFlag} "${cert.path}" (${(err as Error).message})`);
  }
}
