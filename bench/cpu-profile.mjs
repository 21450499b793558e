// Preloaded into the server by `npm run bench -- --profile DIR` (NODE_OPTIONS=--import this file): what
// `node --cpu-prof --cpu-prof-dir DIR` does, which Node 20 refuses in NODE_OPTIONS and the test
// harness gives no other way to pass. Profiles the main thread from start to exit (process.exit, as on
// SIGTERM; not SIGKILL) and writes DIR/CPU.<time>.<pid>.cpuprofile, for Chrome DevTools or speedscope.
// Plain JavaScript: it loads before tsx is registered.
import { Session } from "node:inspector";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const dir = process.env.FENCEKEEPER_BENCH_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post("Profiler.enable");
  session.post("Profiler.setSamplingInterval", { interval: 1000 }); // µs, as --cpu-prof-interval's default
  session.post("Profiler.start");
  process.on("exit", () => {
    // A session in this thread answers synchronously, so this runs before the process is gone.
    session.post("Profiler.stop", (err, result) => {
      if (err) return void console.error(`cpu profile: ${err.message}`);
      mkdirSync(dir, { recursive: true });
      const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", ".").slice(0, 15);
      writeFileSync(join(dir, `CPU.${stamp}.${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
