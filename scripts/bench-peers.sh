#!/usr/bin/env bash
# `npm run bench:peers`: fencekeeper's lock path beside etcd's Mutex, Curator on ZooKeeper and redsync
# on Redis (bench/peers/main.ts). Installs what is missing (as scripts/setup*.sh do: Debian packages as
# root), builds the worker programs when their sources changed, then runs the driver with the arguments.
#   bash scripts/bench-peers.sh --build-only    installs and builds the workers, runs nothing (the smoke
#                                               test's setup, after the tests' own setup)
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--build-only" ] || bash scripts/setup.sh
out=.conformance/peers
mkdir -p "$out"

# The servers: Debian's ZooKeeper (run standalone by the driver, never as the package's service) and
# Redis; a JDK and Maven for Curator's worker.
missing=()
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
{ command -v java && command -v mvn; } >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless maven)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench:peers: installing ${missing[*]} (Debian packages)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq "${missing[@]}" >&2
    for service in zookeeper redis-server; do
      systemctl disable --now "$service" >/dev/null 2>&1 || service "$service" stop >/dev/null 2>&1 || true
    done
  else
    echo "bench:peers: needs ${missing[*]}. Install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
command -v go >/dev/null 2>&1 || { echo "bench:peers: Go 1.26 or newer is needed: https://go.dev/doc/install" >&2; exit 1; }

fingerprint() {
  find "$@" toolchain.env -type f -not -path '*/target/*' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}
built() { [ "$(cat "$out/$1.stamp" 2>/dev/null)" = "$2" ]; }
# As scripts/setup-polyglot.sh: the client compiler alone and one GC thread for these short builds.
mvnq() { MAVEN_OPTS=${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC} mvn -q -B "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2; }

# The Go worker: fencekeeper's Go SDK (by a replace directive), etcd's client and redsync from the Go
# module proxy.
hash=$(fingerprint gen/go sdk/go bench/peers/go)
if ! built go "$hash" || [ ! -x "$out/peers-go" ]; then
  echo "bench:peers: building the Go worker" >&2
  (cd bench/peers/go && go build -o "../../../$out/peers-go" .)
  echo "$hash" >"$out/go.stamp"
fi

# The Java worker: the Java SDK installed in the local Maven repository (as setup-polyglot.sh does),
# Curator from Maven Central.
hash=$(fingerprint gen/java sdk/java bench/peers/java)
if ! built java "$hash" || [ ! -f bench/peers/java/target/peers-java.jar ]; then
  # setup-polyglot.sh's stamp says the SDK of these sources is installed already (the tests' setup).
  if [ "$(cat .conformance/java-sdk.stamp 2>/dev/null)" != "$(fingerprint gen/java sdk/java)" ]; then
    echo "bench:peers: installing the Java SDK in the local Maven repository" >&2
    mvnq -f gen/java/pom.xml install -DskipTests
    mvnq -f sdk/java/pom.xml install -DskipTests
  fi
  echo "bench:peers: building the Java worker" >&2
  mvnq -f bench/peers/java/pom.xml package
  echo "$hash" >"$out/java.stamp"
fi

[ "${1:-}" = "--build-only" ] && exit 0
FK_TEST_COMPILED=1 exec node --import tsx bench/peers/main.ts "$@"
