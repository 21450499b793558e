// The Python fenced endpoint (sdk/python/src/fencekeeper/fenced_http.py): its WSGI middleware on the
// standard library's wsgiref server and its ASGI middleware on a minimal asyncio HTTP server, both in
// sdk/python/tests/fenced_serve.py, run with the venv of scripts/setup-polyglot.sh on the sources of
// the library and of the generated code (so that no reinstall is needed after an edit).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { fencedServiceTests, startServiceProcess } from "./polyglot.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PYTHON = `${ROOT}.conformance/venv/bin/python`;

for (const kind of ["wsgi", "asgi"] as const) {
  fencedServiceTests(
    `Python (${kind.toUpperCase()})`,
    async (server) => {
      if (!existsSync(PYTHON)) throw new Error("the Python venv is not installed: run bash scripts/setup-polyglot.sh (npm test runs it)");
      return startServiceProcess(PYTHON, [`${ROOT}sdk/python/tests/fenced_serve.py`, kind, "--server", server], {
        ...process.env,
        PYTHONPATH: `${ROOT}sdk/python/src:${ROOT}gen/python/src`,
      });
    },
    { admits: true, grpc: false },
  );
}
