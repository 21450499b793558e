// For the conformance tests (conformance.test.ts, verify.test.ts, auth.test.ts): every language's conformance
// client as a process, its single calls (SCENARIO.md) and their JSON answers. Not part of the TypeScript
// client itself; it lives here because this directory is where the clients' own code is.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

export interface Client {
  /** Short name, used in resource names, holder labels and principals. */
  name: string;
  title: string;
  /** The toolchain that setup-polyglot.sh builds it with, or none. */
  language?: "go" | "python" | "java";
  /** What must exist once it is built. */
  artifact?: string;
  /** The command line of one call. */
  argv(command: string): string[];
}

export const CLIENTS: Client[] = [
  {
    name: "go",
    title: "Go (grpc-go)",
    language: "go",
    artifact: ".conformance/go/fk-conformance",
    argv: (command) => [".conformance/go/fk-conformance", command],
  },
  {
    name: "python",
    title: "Python (grpcio)",
    language: "python",
    artifact: ".conformance/venv/bin/python",
    argv: (command) => [".conformance/venv/bin/python", "test/conformance/python/conformance.py", command],
  },
  {
    name: "java",
    title: "Java (grpc-java)",
    language: "java",
    artifact: "test/conformance/java/target/fk-conformance.jar",
    argv: (command) => ["java", "-jar", "test/conformance/java/target/fk-conformance.jar", command],
  },
  ...["connect", "grpc-js"].map((library) => ({
    name: `ts-${library}`,
    title: `TypeScript (${library === "connect" ? "@connectrpc/connect" : "@grpc/grpc-js"})`,
    argv: (command: string) => [process.execPath, "--import", "tsx", "test/conformance/typescript/main.ts", command, "--library", library],
  })),
];

/** Fails, with what to do, when setup-polyglot.sh has not built client. */
export function assertBuilt(client: Client): void {
  if (!client.language) return;
  const missing = `${ROOT}/.conformance/${client.language}.missing`;
  if (existsSync(missing)) {
    throw new Error(`the ${client.title} conformance client is not built: ${readFileSync(missing, "utf8").trim()}`);
  }
  if (!existsSync(`${ROOT}/${client.artifact}`)) {
    throw new Error(`the ${client.title} conformance client is not built: run bash scripts/setup-polyglot.sh (npm test runs it)`);
  }
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs one call of client with --flag value pairs; resolves when it exits, whatever its exit code. */
export async function run(client: Client, command: string, flags: Record<string, string>): Promise<Run> {
  assertBuilt(client);
  const [file, ...args] = client.argv(command);
  const started = Date.now();
  const child = spawn(file, [...args, ...Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v])], { cwd: ROOT });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once("error", (e) => reject(new Error(`${client.title}: cannot run ${file}: ${e.message}`)));
    child.once("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

/** One single call (SCENARIO.md): its JSON answer, the last line it printed. */
export async function call(client: Client, command: string, flags: Record<string, string>): Promise<any> {
  const r = await run(client, command, flags);
  if (r.code !== 0) throw new Error(`${client.title} ${command} exited with ${r.code}:\n${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}

/** A token as the single calls print it and verify --token-json reads it. */
export interface TokenJson {
  resource: string;
  /** Decimal. */
  generation: string;
  /** Decimal. */
  lease_id: string;
  principal: string;
  key_id: string;
  /** Base64. */
  signature: string;
  /** The AcquireMode's number, decimal; absent: 0 (exclusive). */
  mode?: string;
}

/** The token flags of put and release: the token passed whole. */
export function tokenFlags(t: TokenJson): Record<string, string> {
  return { generation: t.generation, "lease-id": t.lease_id, principal: t.principal, "key-id": t.key_id, signature: t.signature };
}
