// Configuration from flags and environment variables (flags win), checked at start so that a bad value
// stops the server with its name and what is allowed.
import { Command, InvalidArgumentError, Option } from "commander";
import { MIN_TTL_SECONDS } from "./domain/limits.js";

export interface Config {
  listen: { host: string; port: number };
  /** Empty: start the embedded single-node etcd. */
  etcdEndpoints: string[];
  dataDir: string;
  embeddedEtcdPorts: { client: number; peer: number };
  prefix: string;
  maxTtlSeconds: number;
  maxTxnOps: number;
  idempotencyTtlSeconds: number;
  etcdTimeoutMs: number;
  shutdownGraceMs: number;
  logLevel: string;
}

function integer(name: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
    }
    return n;
  };
}

function hostPort(raw: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(raw.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || !m[1] || port > 65535) throw new InvalidArgumentError(`listen must be host:port (e.g. 127.0.0.1:50051), got "${raw}"`);
  return { host: m[1].replace(/^\[(.*)\]$/, "$1"), port };
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

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

/** The options of `serve`, shared by the server's own entry point and the CLI. */
export function serveOptions(cmd: Command): Command {
  const opt = (flags: string, description: string, env: string, parse?: (raw: string) => unknown, dflt?: unknown) => {
    const o = new Option(flags, description).env(env);
    if (parse) o.argParser(parse);
    if (dflt !== undefined) o.default(dflt);
    cmd.addOption(o);
  };
  opt("--listen <host:port>", "address to serve gRPC, gRPC-Web and Connect on", "FENCEKEEPER_LISTEN", hostPort, hostPort("127.0.0.1:50051"));
  opt("--etcd <urls>", "etcd endpoints, comma-separated; unset: start an embedded single-node etcd", "FENCEKEEPER_ETCD_ENDPOINTS", endpoints, []);
  opt("--data-dir <dir>", "where the embedded etcd keeps its data", "FENCEKEEPER_DATA_DIR", undefined, ".fencekeeper");
  opt("--embedded-etcd-port <port>", "client port of the embedded etcd (its peer port is the next one)", "FENCEKEEPER_EMBEDDED_ETCD_PORT", integer("embedded-etcd-port", 1, 65534), 52379);
  opt("--prefix <prefix>", "etcd key prefix under which all state lives", "FENCEKEEPER_PREFIX", prefix, "/fencekeeper/");
  opt("--max-ttl <seconds>", "longest lease TTL a client may ask for", "FENCEKEEPER_MAX_TTL", integer("max-ttl", MIN_TTL_SECONDS, 86400), 300);
  opt("--max-txn-ops <n>", "most operations in one Txn", "FENCEKEEPER_MAX_TXN_OPS", integer("max-txn-ops", 1, 1000), 64);
  opt("--idempotency-ttl <seconds>", "how long idempotency records are kept", "FENCEKEEPER_IDEMPOTENCY_TTL", integer("idempotency-ttl", 60, 30 * 86400), 86400);
  opt("--etcd-timeout <ms>", "deadline of each etcd call", "FENCEKEEPER_ETCD_TIMEOUT", integer("etcd-timeout", 100, 60_000), 5000);
  opt("--shutdown-grace <ms>", "how long calls in flight may finish at shutdown", "FENCEKEEPER_SHUTDOWN_GRACE", integer("shutdown-grace", 0, 600_000), 10_000);
  cmd.addOption(new Option("--log-level <level>", "log level").env("FENCEKEEPER_LOG_LEVEL").choices(LOG_LEVELS).default("info"));
  return cmd;
}

export function toConfig(o: Record<string, unknown>): Config {
  const port = o.embeddedEtcdPort as number;
  return {
    listen: o.listen as Config["listen"],
    etcdEndpoints: o.etcd as string[],
    dataDir: o.dataDir as string,
    embeddedEtcdPorts: { client: port, peer: port + 1 },
    prefix: o.prefix as string,
    maxTtlSeconds: o.maxTtl as number,
    maxTxnOps: o.maxTxnOps as number,
    idempotencyTtlSeconds: o.idempotencyTtl as number,
    etcdTimeoutMs: o.etcdTimeout as number,
    shutdownGraceMs: o.shutdownGrace as number,
    logLevel: o.logLevel as string,
  };
}
