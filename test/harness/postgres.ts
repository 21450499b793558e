// A real PostgreSQL for tests: a throwaway cluster (initdb) in a fresh temporary folder, served on a free
// loopback port, removed after. The server is Debian's `postgresql` package (scripts/setup.sh --test
// installs it). PostgreSQL refuses to run as root, and CI runs as root: then the cluster belongs to, and
// the server runs as, the unprivileged system user `fkpg` (created when missing).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "../../server/etcd/embedded.js";

export const POSTGRES_INSTALL_HINT = "sudo apt-get install -y postgresql   (Debian/Ubuntu; or run bash scripts/setup.sh --test as root)";
const USER = "fkpg";

export interface TestPostgres {
  /** A connection string for the superuser `postgres`, database `postgres`, over TCP on loopback. */
  readonly url: string;
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
}

/** The bin folder of the newest PostgreSQL Debian installed, e.g. /usr/lib/postgresql/15/bin. */
export function postgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], "bin") : undefined;
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (!bin) throw new Error(`the PostgreSQL tests need Debian's postgresql package. Install it with:\n  ${POSTGRES_INSTALL_HINT}`);
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-pg-"));
  const data = join(dir, "data");
  // As root, every command runs as fkpg, which must own the folder; otherwise as ourselves.
  const asUser = process.getuid?.() === 0 ? ownBy(dir) : (cmd: string, args: string[]) => [cmd, ...args];
  const env = { ...process.env, LC_ALL: "C", LANG: "C" };

  const [initCmd, ...initArgs] = asUser(join(bin, "initdb"), ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
  const init = spawnSync(initCmd, initArgs, { env, encoding: "utf8" });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status}):\n${init.stderr || init.error}`);
  }

  const port = await freePort();
  // Durability is no concern of a throwaway cluster: fsync off makes it start and write faster. The
  // socket goes in our folder, not /var/run/postgresql, which fkpg may not write.
  const [cmd, ...args] = asUser(join(bin, "postgres"), [
    "-D", data, "-p", String(port), "-k", dir,
    "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
  ]);
  const log: string[] = [];
  const child: ChildProcess = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => log.push(String(d)));
  child.stderr!.on("data", (d) => log.push(String(d)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // However this process ends (short of SIGKILL), PostgreSQL does not outlive it.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.removeListener("exit", killOnExit));

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`postgres exited at start (${child.exitCode ?? child.signalCode}):\n${log.join("")}`);
    }
    if (await accepts(url)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`postgres did not accept connections on port ${port} within 30 s:\n${log.join("")}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    url,
    async destroy() {
      if (child.exitCode === null && child.signalCode === null) {
        // Smart shutdown first: pg's Pool.end() resolves while its connections are still closing, and a
        // connection cut by a fast shutdown would raise an error in the test. Then fast, then kill.
        child.kill("SIGTERM");
        const fast = setTimeout(() => child.kill("SIGINT"), 5_000);
        const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(fast);
        clearTimeout(kill);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Makes `dir` fkpg's (creating the user if missing); returns how to run a command as fkpg. */
function ownBy(dir: string): (cmd: string, args: string[]) => string[] {
  if (spawnSync("id", ["-u", USER]).status !== 0) {
    const add = spawnSync("useradd", ["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", USER], { encoding: "utf8" });
    // Another test process may have created it at the same moment: only a user still missing is a failure.
    if (add.status !== 0 && spawnSync("id", ["-u", USER]).status !== 0) throw new Error(`could not create the system user ${USER}: ${add.stderr}`);
  }
  const uid = Number(spawnSync("id", ["-u", USER], { encoding: "utf8" }).stdout);
  const gid = Number(spawnSync("id", ["-g", USER], { encoding: "utf8" }).stdout);
  chownSync(dir, uid, gid);
  // setpriv execs the command itself (no process in between), so signals reach postgres directly.
  return (cmd, args) => ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--", cmd, ...args];
}

async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
