// The Go fenced endpoint (sdk/go/fencedhttp): its net/http middleware and gRPC unary interceptor in
// sdk/go/cmd/fk-fenced-serve, built once here (Go's build cache makes it quick after the first time).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { fencedServiceTests, startServiceProcess } from "./polyglot.js";

const SDK = fileURLToPath(new URL("../../sdk/go", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "fencekeeper-fenced-go-"));
after(() => rmSync(dir, { recursive: true, force: true }));

fencedServiceTests(
  "Go",
  async (server) => {
    const binary = join(dir, "fk-fenced-serve");
    await promisify(execFile)("go", ["build", "-o", binary, "./cmd/fk-fenced-serve"], { cwd: SDK }).catch((err) => {
      throw new Error(`go build of sdk/go/cmd/fk-fenced-serve failed (Go 1.26 or newer is needed):\n${err.stderr ?? err}`);
    });
    return startServiceProcess(binary, ["--server", server]);
  },
  { admits: true, grpc: true },
);
