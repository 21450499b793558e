#!/usr/bin/env bash
# Installs what fencekeeper needs to run and test on a fresh machine: npm dependencies, and etcd
# (Debian's etcd-server) when it is missing. Safe to run again: it does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."
# --test: also what the test suite needs beyond running the server (other languages' toolchains).
for_tests=0
[ "${1:-}" = "--test" ] && for_tests=1

# The tests' quick check: a stamp newer than every input of this setup means the last `--test` setup
# finished and nothing it depends on changed since, so a second `npm test` starts testing at once.
# A checkout, a pull or an edit of any input makes it run again (and then only what changed is redone).
test_stamp=.conformance/setup-test.stamp
inputs=(server cli client gen proto sdk test/conformance package.json package-lock.json toolchain.env
  tsconfig.json tsconfig.build.json scripts/setup.sh scripts/setup-polyglot.sh scripts/build.sh)
setup_fresh() {
  [ -f "$test_stamp" ] && [ -d node_modules ] && [ -f dist/.built ] && command -v etcd >/dev/null 2>&1 &&
    ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 &&
    [ -f /usr/share/java/zookeeper.jar ] &&
    { [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ]; } &&
    command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 &&
    [ -z "$(find "${inputs[@]}" \( -name dist -o -name target -o -name __pycache__ -o -name '*.egg-info' \) -prune \
      -o -newer "$test_stamp" -print -quit 2>/dev/null)" ]
}
if [ "$for_tests" = 1 ] && setup_fresh; then exit 0; fi
# Stamped with the time this setup started: an input edited meanwhile makes the next one run again.
[ "$for_tests" = 1 ] && mkdir -p .conformance && touch .conformance/setup-test.starting

# Whether node_modules holds exactly what package-lock.json pins: every package npm installed (its own
# record, node_modules/.package-lock.json) at the locked version, and none missing but the optional ones
# of other platforms. By content, not by file times: a fresh checkout's lock file is newer than a
# node_modules installed from the same lock.
npm_current() {
  node -e '
    const fs = require("fs");
    const want = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages;
    let have;
    try { have = JSON.parse(fs.readFileSync("node_modules/.package-lock.json", "utf8")).packages; } catch { process.exit(1); }
    for (const [path, w] of Object.entries(want)) {
      if (path === "") continue;
      const h = have[path];
      if (!h) { if (w.optional) continue; process.exit(1); }
      if (h.version !== w.version) process.exit(1);
    }
    for (const path of Object.keys(have)) if (!(path in want)) process.exit(1);
  ' 2>/dev/null
}
if [ ! -d node_modules ] || ! npm_current; then
  # `npm ci` empties node_modules first: through a link it would empty the folder it points to, which
  # other checkouts may share. Install into a folder of this checkout's own instead.
  if [ -L node_modules ]; then
    echo "fencekeeper setup: node_modules is a link to $(readlink node_modules) that does not match package-lock.json; installing into a node_modules of this checkout's own, leaving the linked folder as it is" >&2
    rm node_modules
  fi
  echo "fencekeeper setup: installing npm dependencies" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi

# The JavaScript that `npm start`, the container image and the fencekeeper command run; compiled only
# when a source changed since the last build.
bash scripts/build.sh

if ! command -v etcd >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "fencekeeper setup: installing etcd (Debian package etcd-server)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq etcd-server >&2
  else
    echo "fencekeeper setup: etcd is missing. Install it with:" >&2
    echo "  sudo apt-get install -y etcd-server" >&2
    exit 1
  fi
fi

if [ "$for_tests" = 1 ]; then
  # The fenced-resource recipes' tests run throwaway servers of Debian's packages: PostgreSQL, Redis (a
  # server and a small Cluster) and MariaDB (test/harness/postgres.ts, redis.ts, mariadb.ts); the fault
  # runs need iproute2. The missing ones are installed together, with one apt-get. The harnesses start their own servers on free ports,
  # never the packages' services: those are stopped and kept from starting at boot.
  missing=()
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || missing+=(postgresql)
  { command -v redis-server && command -v redis-cli; } >/dev/null 2>&1 || missing+=(redis-server)
  [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ] || missing+=(mariadb-server)
  # ZooKeeper, for the smoke run of `npm run bench:peers` (Curator's locks beside fencekeeper's).
  [ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
  # The fault runs' network namespaces, partitions and bad links (test/faults/netns.ts).
  { command -v ip && command -v tc; } >/dev/null 2>&1 || missing+=(iproute2)
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "fencekeeper setup: installing ${missing[*]} (Debian packages) for the fencing recipes' tests" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2 && apt-get install -y -qq "${missing[@]}" >&2 \
        || { echo "fencekeeper setup: installing ${missing[*]} failed; the tests need them" >&2; exit 1; }
      for service in postgresql redis-server mariadb zookeeper; do
        case " ${missing[*]} " in *" ${service%-server}"*) systemctl disable --now "$service" >/dev/null 2>&1 || service "$service" stop >/dev/null 2>&1 || true ;; esac
      done
    else
      echo "fencekeeper setup: the tests need ${missing[*]}. Install them with:" >&2
      echo "  sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  # Installs that take minutes on a fresh machine (building helm, chromium's packages) run after the
  # others, detached and at the lowest priority while the tests run; the tests that need them wait for
  # them (each script takes a lock).
  background=(scripts/setup-helm.sh scripts/setup-chromium.sh)
  for extra in scripts/setup-*.sh; do
    case " ${background[*]} " in *" $extra "*) continue ;; esac
    [ -e "$extra" ] && bash "$extra"
  done
  for extra in "${background[@]}"; do
    bash "$extra" --background
  done
fi

# Not stamped while a toolchain is missing (setup-polyglot.sh notes it in .conformance/*.missing), so
# that the next run builds what it could not once the toolchain is installed.
if [ "$for_tests" = 1 ] && ! ls .conformance/*.missing >/dev/null 2>&1; then
  mv .conformance/setup-test.starting "$test_stamp"
fi
exit 0
