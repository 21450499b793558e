// The Java fenced endpoint (sdk/java: FencedEndpoint, FencedServerInterceptor for gRPC, FencedHttpFilter
// for the JDK's HttpServer; the servlet API is not among the build's dependencies) in
// sdk/java/probe/.../FencedServe.java. Compiled once here with javac, from the sources of the library and
// of the generated code, against the dependency jars that scripts/setup-polyglot.sh copied beside the
// probe: no Maven run, and no stale installed jar.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { fencedServiceTests, startServiceProcess } from "./polyglot.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const LIB = `${ROOT}sdk/java/probe/target/lib`;
const dir = mkdtempSync(join(tmpdir(), "fencekeeper-fenced-java-"));
after(() => rmSync(dir, { recursive: true, force: true }));

function javaSources(folder: string): string[] {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".java") && !join(e.parentPath, e.name).includes("/target/"))
    .map((e) => join(e.parentPath, e.name));
}

fencedServiceTests(
  "Java",
  async (server) => {
    if (!existsSync(LIB)) throw new Error("the Java SDK's dependencies are not there: run bash scripts/setup-polyglot.sh (npm test runs it)");
    const probe = `${ROOT}sdk/java/probe/src/main/java/io/fencekeeper/probe`;
    const sources = [...javaSources(`${ROOT}gen/java/src`), ...javaSources(`${ROOT}sdk/java/src/main/java`), `${probe}/FencedServe.java`, `${probe}/Json.java`];
    const classes = join(dir, "classes");
    // Our classes first: the lib folder holds an installed fencekeeper-client and -api that may be older.
    await promisify(execFile)("javac", ["-nowarn", "-d", classes, "-cp", `${LIB}/*`, ...sources], { maxBuffer: 16 << 20 }).catch((err) => {
      throw new Error(`javac of the Java SDK and FencedServe failed:\n${err.stderr ?? err}`);
    });
    return startServiceProcess("java", ["-cp", `${classes}:${LIB}/*`, "io.fencekeeper.probe.FencedServe", "--server", server]);
  },
  { admits: true, grpc: true },
);
