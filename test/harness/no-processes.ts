// The unit tier starts nothing: loaded before its tests (`npm run test:unit`), it makes every way of
// starting a process throw, so that a test that starts etcd, a server or a toolchain fails there and says
// where it belongs instead of slowing the tier down.
import { createRequire, syncBuiltinESMExports } from "node:module";

const require = createRequire(import.meta.url);
const childProcess = require("node:child_process") as Record<string, unknown>;
for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"]) {
  childProcess[name] = () => {
    throw new Error(`the unit tier starts no process, and a test called child_process.${name}: put the test in test/integration (or another folder of the core tier)`);
  };
}
// ES modules that import { spawn } from "node:child_process" see the replacements too.
syncBuiltinESMExports();
