// For the conformance tests (conformance.test.ts, verify.test.ts, auth-*.test.ts): every language's conformance
// client as a process, its single calls (SCENARIO.md) and their JSON answers, through one `calls` process
// per client and test file. Not part of the TypeScript
// client itself; it lives here because this directory is where the clients' own code is.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { nodeProgram } from "../../harness/programs.js";

export const ROOT = fileURLToPath(new URL("../../..", import.meta.url));

export interface Client {
  /** Short name, used in resource names, holder labels and principals. */
  name: string;
  title: string;
  /** The toolchain that setup-polyglot.sh builds it with, or none. */
  language?: "go" | "python" | "java";
  /** What must exist once it is built. */
  artifact?: string;
  /** The program: the command line before the command. */
  program: string[];
  /** Arguments every command of this client takes after the command (the TypeScript client's library). */
  always?: string[];
}

/** The command line of one command of client. */
export const argv = (client: Client, command: string) => [...client.program, command, ...(client.always ?? [])];

export const CLIENTS: Client[] = [
  { name: "go", title: "Go (grpc-go)", language: "go", artifact: ".conformance/go/fk-conformance", program: [".conformance/go/fk-conformance"] },
  {
    name: "python",
    title: "Python (grpcio)",
    language: "python",
    artifact: ".conformance/venv/bin/python",
    program: [".conformance/venv/bin/python", "test/conformance/python/conformance.py"],
  },
  {
    name: "java",
    title: "Java (grpc-java)",
    language: "java",
    artifact: "test/conformance/java/target/fk-conformance.jar",
    program: ["java", "-jar", "test/conformance/java/target/fk-conformance.jar"],
  },
  ...["connect", "grpc-js"].map((library) => ({
    name: `ts-${library}`,
    title: `TypeScript (${library === "connect" ? "@connectrpc/connect" : "@grpc/grpc-js"})`,
    program: nodeProgram("test/conformance/typescript/main.ts"),
    always: ["--library", library],
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

const asArgs = (flags: Record<string, string>) => Object.entries(flags).flatMap(([k, v]) => [`--${k}`, v]);

/** Runs one command of client, as a process of its own, with --flag value pairs; resolves when it exits, whatever its exit code. */
export async function run(client: Client, command: string, flags: Record<string, string>): Promise<Run> {
  assertBuilt(client);
  const [file, ...args] = argv(client, command);
  const started = Date.now();
  const child = spawn(file, [...args, ...asArgs(flags)], { cwd: ROOT });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once("error", (e) => reject(new Error(`${client.title}: cannot run ${file}: ${e.message}`)));
    child.once("close", (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

/**
 * A client's `calls` process (SCENARIO.md): its single calls one after another, a line each way, so that
 * a test file starts each client once rather than once a call (a JVM or a tsx start is seconds on a loaded
 * machine). Each call still builds its own connection from its own flags, as a process of its own would.
 */
class Caller {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: { resolve: (r: Run) => void; reject: (e: Error) => void; started: number }[] = [];
  private partial = "";
  private stderr = "";
  private readonly exited: Promise<void>;

  constructor(private readonly client: Client) {
    const [file, ...args] = argv(client, "calls");
    this.child = spawn(file, args, { cwd: ROOT });
    this.child.stdout.setEncoding("utf8").on("data", (d: string) => this.read(d));
    this.child.stderr.setEncoding("utf8").on("data", (d: string) => (this.stderr = (this.stderr + d).slice(-8192)));
    this.exited = new Promise((resolve) => {
      const gone = (why: string) => {
        for (const w of this.waiting.splice(0)) w.reject(new Error(`${client.title} calls: ${why} before its answer:\n${this.stderr}`));
        resolve();
      };
      this.child.once("error", (e) => gone(`cannot run ${file}: ${e.message}`));
      this.child.once("close", (code) => gone(`exited with ${code}`));
    });
  }

  call(args: string[]): Promise<Run> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject, started: Date.now() });
      this.child.stdin.write(JSON.stringify(args) + "\n");
    });
  }

  private read(chunk: string): void {
    const lines = (this.partial + chunk).split("\n");
    this.partial = lines.pop()!;
    for (const line of lines) {
      const w = this.waiting.shift();
      if (!w) continue;
      try {
        const a = JSON.parse(line) as { exit: number; stdout: string; stderr: string };
        w.resolve({ code: a.exit, stdout: a.stdout, stderr: a.stderr, ms: Date.now() - w.started });
      } catch {
        w.reject(new Error(`${this.client.title} calls: an answer that is not JSON: ${line.slice(0, 200)}`));
      }
    }
  }

  end(): Promise<void> {
    this.child.stdin.end();
    return this.exited;
  }
}

const callers = new Map<string, Caller>();

/** One single call (SCENARIO.md): its JSON answer, the last line it printed. */
export async function call(client: Client, command: string, flags: Record<string, string>): Promise<any> {
  assertBuilt(client);
  let caller = callers.get(client.name);
  if (!caller) callers.set(client.name, (caller = new Caller(client)));
  const r = await caller.call([command, ...(client.always ?? []), ...asArgs(flags)]);
  if (r.code !== 0) throw new Error(`${client.title} ${command} exited with ${r.code}:\n${r.stderr}${r.stdout}`);
  return JSON.parse(r.stdout.trim().split("\n").at(-1)!);
}

/** Ends the clients' `calls` processes: the after hook of every file that makes single calls. */
export async function endCalls(): Promise<void> {
  const ending = [...callers.values()].map((c) => c.end());
  callers.clear();
  await Promise.all(ending);
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
