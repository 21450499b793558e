// A real MariaDB for tests: a throwaway server (Debian's `mariadb-server`, which scripts/setup.sh --test
// installs) with its data in a fresh temporary folder, served on a free loopback port, removed after.
// mariadbd runs as root only when told to (--user=root), and CI runs as root: then the folder belongs to,
// and the server runs as, the unprivileged system user `fkmy` (created when missing).
//
// No mariadb-install-db: the tests need no accounts, so the server starts on an empty folder with the
// grant tables off (InnoDB creates its files on the first start), in about a second where
// mariadb-install-db alone takes five. Anyone who reaches the loopback port is root: a test server only.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import { freePort } from "../../server/etcd/embedded.js";

export const MARIADB_INSTALL_HINT = "sudo apt-get install -y mariadb-server   (Debian/Ubuntu; or run bash scripts/setup.sh --test as root)";
const USER = "fkmy";
const MARIADBD = ["/usr/sbin/mariadbd", "/usr/sbin/mysqld"].find((p) => existsSync(p));

export interface TestMariadb {
  readonly host: string;
  readonly port: number;
  /** An empty database made for the test run (`fencekeeper`). */
  readonly database: string;
  /** Options for mysql2's createConnection/createPool: user root, no password, the database above. */
  readonly options: { host: string; port: number; user: string; database: string };
  /** Stops the server and removes its folder. */
  destroy(): Promise<void>;
}

export async function startMariadb(): Promise<TestMariadb> {
  if (!MARIADBD) throw new Error(`the MariaDB tests need Debian's mariadb-server package. Install it with:\n  ${MARIADB_INSTALL_HINT}`);
  const dir = mkdtempSync(join(tmpdir(), "fencekeeper-test-my-"));
  const data = join(dir, "data");
  mkdirSync(data);
  // As root, the server runs as fkmy, which must own the folder; otherwise as ourselves.
  const asUser = process.getuid?.() === 0 ? ownBy(dir, data) : (cmd: string, args: string[]) => [cmd, ...args];

  const port = await freePort();
  // --no-defaults: nothing from /etc/mysql (the package's own service, its socket and log paths). Durability
  // is no concern of a throwaway server: no binary log, no doublewrite, the redo log flushed once a second;
  // a small buffer pool and redo log keep the first start (which creates them) short.
  const [cmd, ...args] = asUser(MARIADBD, [
    "--no-defaults", `--datadir=${data}`, `--socket=${join(dir, "sock")}`, `--pid-file=${join(dir, "pid")}`, `--tmpdir=${dir}`,
    `--port=${port}`, "--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-grant-tables", "--skip-log-bin",
    "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=4M", "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0",
    "--skip-innodb-adaptive-hash-index",
  ]);
  const log: string[] = [];
  const child: ChildProcess = spawn(cmd, args, { env: { ...process.env, LC_ALL: "C", LANG: "C" }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => log.push(String(d)));
  child.stderr!.on("data", (d) => log.push(String(d)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // However this process ends (short of SIGKILL), MariaDB does not outlive it.
  const killOnExit = () => child.kill("SIGKILL");
  process.once("exit", killOnExit);
  child.once("exit", () => process.removeListener("exit", killOnExit));

  const host = "127.0.0.1";
  const database = "fencekeeper";
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`mariadbd exited at start (${child.exitCode ?? child.signalCode}):\n${log.join("")}`);
    }
    if (await accepts(host, port, database)) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`mariadbd did not accept connections on port ${port} within 30 s:\n${log.join("")}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  return {
    host,
    port,
    database,
    options: { host, port, user: "root", database },
    async destroy() {
      if (child.exitCode === null && child.signalCode === null) {
        // SIGTERM is a normal shutdown; a server that hangs in it is killed.
        child.kill("SIGTERM");
        const kill = setTimeout(() => child.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(kill);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Makes `dir` and `data` fkmy's (creating the user if missing); returns how to run a command as fkmy. */
function ownBy(dir: string, data: string): (cmd: string, args: string[]) => string[] {
  if (spawnSync("id", ["-u", USER]).status !== 0) {
    const add = spawnSync("useradd", ["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", USER], { encoding: "utf8" });
    // Another test process may have created it at the same moment: only a user still missing is a failure.
    if (add.status !== 0 && spawnSync("id", ["-u", USER]).status !== 0) throw new Error(`could not create the system user ${USER}: ${add.stderr}`);
  }
  const uid = Number(spawnSync("id", ["-u", USER], { encoding: "utf8" }).stdout);
  const gid = Number(spawnSync("id", ["-g", USER], { encoding: "utf8" }).stdout);
  chownSync(dir, uid, gid);
  chownSync(data, uid, gid);
  // setpriv execs the command itself (no process in between), so signals reach mariadbd directly.
  return (cmd, args) => ["setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--", cmd, ...args];
}

/** Whether the server answers; the first time it does, makes the tests' database. */
async function accepts(host: string, port: number, database: string): Promise<boolean> {
  let c: mysql.Connection | undefined;
  try {
    c = await mysql.createConnection({ host, port, user: "root", connectTimeout: 1_000 });
    await c.query(`CREATE DATABASE IF NOT EXISTS ${database}`);
    return true;
  } catch {
    return false;
  } finally {
    await c?.end().catch(() => {});
  }
}
