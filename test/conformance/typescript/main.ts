// The TypeScript conformance client: the scenario of test/conformance/SCENARIO.md, and the single calls
// that let the conformance test run it against the other languages' clients. --library chooses the gRPC
// library: connect (@connectrpc/connect) or grpc-js (@grpc/grpc-js). calls runs many single calls in one
// process, so that the tests need not start node for each.
//   node --import tsx test/conformance/typescript/main.ts <command> --library connect|grpc-js --server URL --resource R ...
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { format, parseArgs } from "node:util";
import type { FencingToken } from "../../../gen/ts/fencekeeper/v1/token_pb.js";
import type { Auth, Library } from "./api.js";
import { connectLibrary } from "./connect.js";
import { grpcJsLibrary } from "./grpc-js.js";
import { runScenario, Unexpected } from "./scenario.js";
import { verifyToken } from "./verify.js";

const USAGE = `usage: main.ts COMMAND --library connect|grpc-js --server http(s)://host:port [flags]
  scenario --resource R                      run the whole scenario of SCENARIO.md
  acquire  --resource R --holder H [--ttl SECONDS]   print the token
  put      --resource R --key K --value V TOKEN
  get      --resource R --key K
  release  --resource R TOKEN
  keys                                       print the token keys (ListTokenKeys)
  verify   --token-json FILE --keys-json FILE   check a token's signature offline (no --server nor --library)
  calls    [--library L]                     run single calls in one process: per stdin line a JSON array of one
                                             call's arguments (--library L unless it gives its own), per stdout
                                             line {"exit":N,"stdout":S,"stderr":S}
TOKEN: --generation G --lease-id L [--principal P --key-id K --signature BASE64]
credentials: [--bearer JWT] [--tls-ca FILE] [--tls-cert FILE --tls-key FILE]`;

const FLAGS = [
  ...["library", "server", "resource", "holder", "ttl", "key", "value", "generation", "lease-id", "principal", "key-id", "signature"],
  ...["token-json", "keys-json", "bearer", "tls-ca", "tls-cert", "tls-key"],
];

const libraries: Record<string, Library> = { connect: connectLibrary, "grpc-js": grpcJsLibrary };

/** Where a call prints, a line at a time: the process's stdout and stderr, or the answer of a calls line. */
type Print = (line: string) => void;

function usage(err: Print): number {
  err(USAGE);
  return 2;
}

/** A token as the single calls print it: 64-bit integers as decimal strings, the signature in base64. */
function tokenJson(t: FencingToken) {
  return {
    resource: t.resource,
    generation: String(t.generation),
    lease_id: String(t.leaseId),
    principal: t.principal,
    key_id: t.keyId,
    signature: Buffer.from(t.signature).toString("base64"),
  };
}

/** The answer of one single call; undefined for a command that is none. */
async function singleCall(library: Library, command: string, f: Record<string, string>, auth: Auth): Promise<unknown> {
  const api = library.connect(f.server, auth);
  try {
    const token = {
      resource: f.resource,
      generation: BigInt(f.generation),
      leaseId: BigInt(f["lease-id"]),
      principal: f.principal,
      keyId: f["key-id"],
      signature: Buffer.from(f.signature, "base64"),
    };
    switch (command) {
      case "acquire": {
        const res = await api.acquire({ resource: f.resource, ttl: { seconds: BigInt(f.ttl) }, holder: f.holder });
        return { ok: true, ...tokenJson(res.token!) };
      }
      case "put": {
        const res = await api.put({ resource: f.resource, key: f.key, value: new TextEncoder().encode(f.value), mutation: { token } });
        return { ok: true, fence: String(res.commit!.fence) };
      }
      case "get": {
        const res = await api.get({ resource: f.resource, key: f.key });
        return { ok: true, found: res.found, value: new TextDecoder().decode(res.value) };
      }
      case "release":
        await api.release({ token });
        return { ok: true };
      case "keys": {
        // The keys alone, as verify --keys-json reads them.
        const res = await api.listTokenKeys();
        return res.keys.map((k) => ({ key_id: k.keyId, algorithm: k.algorithm, public_key: Buffer.from(k.publicKey).toString("base64") }));
      }
      default:
        return undefined;
    }
  } catch (error) {
    const failure = library.failureOf(error);
    if (!failure) throw error;
    return { ok: false, code: failure.code, reason: failure.reason };
  } finally {
    api.close();
  }
}

/** Verifies the token of one JSON file with the keys of another. */
function verifyFiles(tokenFile: string, keysFile: string) {
  const t = JSON.parse(readFileSync(tokenFile, "utf8"));
  const listed: { key_id: string; algorithm?: string; public_key: string }[] = JSON.parse(readFileSync(keysFile, "utf8"));
  const keys = new Map(listed.filter((k) => (k.algorithm ?? "Ed25519") === "Ed25519").map((k) => [k.key_id, Buffer.from(k.public_key, "base64")]));
  return verifyToken(
    {
      resource: t.resource ?? "",
      generation: BigInt(t.generation ?? "0"),
      leaseId: BigInt(t.lease_id ?? "0"),
      principal: t.principal ?? "",
      keyId: t.key_id ?? "",
      signature: Buffer.from(t.signature ?? "", "base64"),
      mode: Number(t.mode ?? "0"),
    },
    keys,
  );
}

/**
 * One single call (or the scenario) of argv, the command and then its flags: prints with out and err and
 * returns the exit code. Throws what ends the process with exit code 1.
 */
async function runCall(argv: string[], out: Print, err: Print): Promise<number> {
  const [command, ...rest] = argv;
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({ args: rest, options: Object.fromEntries(FLAGS.map((n) => [n, { type: "string" as const }])) }));
  } catch {
    return usage(err);
  }
  if (command === "verify") {
    if (!values["token-json"] || !values["keys-json"]) return usage(err);
    out(JSON.stringify(verifyFiles(values["token-json"], values["keys-json"])));
    return 0;
  }
  const library = libraries[values.library ?? ""];
  if (!library || !values.server || (command !== "keys" && !values.resource)) return usage(err);
  const defaults = { holder: library.name, ttl: "2", key: "", value: "", generation: "0", "lease-id": "0", principal: "", "key-id": "", signature: "" };
  const flags = { ...defaults, ...values } as Record<string, string>;
  const auth: Auth = { bearer: values.bearer, ca: values["tls-ca"], cert: values["tls-cert"], key: values["tls-key"] };

  if (command === "scenario") {
    try {
      await runScenario(library, flags.server, flags.resource, auth);
      return 0;
    } catch (error) {
      if (!(error instanceof Unexpected) && !library.failureOf(error)) throw error;
      err(`FAIL ${(error as Error).message}`);
      return 1;
    }
  }
  const answer = await singleCall(library, command, flags, auth);
  if (answer === undefined) return usage(err);
  out(JSON.stringify(answer));
  return 0;
}

/**
 * The calls command: runs the call of each stdin line, a JSON array of its arguments, one after another,
 * and writes for each one stdout line once it is over: its exit code and what it printed, as the same
 * arguments give them as a process. --library is the library of the lines that give none.
 */
async function calls(args: string[]): Promise<number> {
  let library: string | undefined;
  try {
    ({ library } = parseArgs({ args, options: { library: { type: "string" } } }).values);
  } catch {
    return usage(console.error);
  }
  if (library !== undefined && !libraries[library]) return usage(console.error);
  // Only the answers go to stdout: whatever else would print there (a library's log) goes to stderr.
  const stdout = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    const answer = JSON.stringify(await callLine(line, library));
    await new Promise<void>((resolve, reject) => stdout(`${answer}\n`, (error) => (error ? reject(error) : resolve())));
  }
  return 0;
}

/** One line of calls: its exit code and what it printed. */
async function callLine(line: string, library: string | undefined): Promise<{ exit: number; stdout: string; stderr: string }> {
  const answer = { exit: 0, stdout: "", stderr: "" };
  const out: Print = (text) => (answer.stdout += `${text}\n`);
  const err: Print = (text) => (answer.stderr += `${text}\n`);
  let argv: unknown;
  let why = "not an array of strings";
  try {
    argv = JSON.parse(line);
  } catch (error) {
    why = (error as Error).message;
  }
  if (!Array.isArray(argv) || !argv.every((arg) => typeof arg === "string")) {
    err(`calls: a line must be a JSON array of strings (${why}): ${line}`);
    return { ...answer, exit: 2 };
  }
  const [command, ...flags] = argv as string[];
  if (command === "scenario" || command === "calls") {
    err(`calls: ${command} runs only as its own process`);
    return { ...answer, exit: 2 };
  }
  // As the tests run a single call: the command, --library, then the line's flags, whose own --library wins.
  const args = library === undefined || command === undefined ? (argv as string[]) : [command, "--library", library, ...flags];
  try {
    answer.exit = await runCall(args, out, err);
  } catch (error) {
    err(format(error));
    answer.exit = 1;
  }
  return answer;
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args[0] === "calls") return calls(args.slice(1));
  return runCall(args, console.log, console.error);
}

// Exit at once: neither library keeps the process alive on purpose, but idle HTTP/2 sessions may.
main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
