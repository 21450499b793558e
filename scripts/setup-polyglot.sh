#!/usr/bin/env bash
# Builds the conformance clients of test/conformance/ (see SCENARIO.md there) against the committed
# stubs in gen/, at the versions of toolchain.env:
#   Go      .conformance/go/fk-conformance
#   Python  .conformance/venv, with gen/python, grpcio, grpcio-status, protobuf and cryptography installed
#   Java    gen/java installed in ~/.m2, then test/conformance/java/target/fk-conformance.jar
# TypeScript needs nothing beyond npm's packages.
# `scripts/setup.sh --test` (and so `npm test`) runs it. Safe to run again: a client whose sources,
# stubs and versions have not changed since its last build is not built again.
# A missing toolchain does not stop the others: its client is left unbuilt, the reason is kept in
# .conformance/<language>.missing, and the conformance test of that language fails with it.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../toolchain.env
source toolchain.env
out=.conformance
mkdir -p "$out"

# fingerprint PATH...: one hash of the files under the paths and of toolchain.env.
fingerprint() {
  find "$@" toolchain.env -type f -not -path '*/target/*' -not -path '*/__pycache__/*' -print0 |
    sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}
# Debian's Maven 3.8 writes colour resets even with -q -B: keep its messages, drop those. Maven runs
# with the client compiler alone and one GC thread (unless MAVEN_OPTS says otherwise): a build of these
# small projects is over before the server compiler pays for itself. The Java SDK, its stubs and its
# probe built from nothing on this 2-core machine: 19.5 s (36 s of CPU) → 11.8 s (16 s of CPU).
mvnq() { MAVEN_OPTS=${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC} mvn -q -B "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2; }
built() { [ "$(cat "$out/$1.stamp" 2>/dev/null)" = "$2" ]; }
mark_built() { rm -f "$out/$1.missing"; echo "$2" >"$out/$1.stamp"; }
missing() {
  echo "$2" >"$out/$1.missing"
  rm -f "$out/$1.stamp"
  echo "setup-polyglot: the $1 conformance client is not built: $2" >&2
}

# Hints shared by the sections below.
python_hint="Install Python 3.10 or newer with venv: sudo apt-get install -y python3 python3-venv python3-pip"
java_hint="Install a JDK 17 or newer and Maven: sudo apt-get install -y openjdk-17-jdk-headless maven"

# Go: the conformance client, the client library and its probes, the client-go and controller-runtime locks.
go_lane() {
  # Go: grpc-go and the go_package of the protos need Go 1.26 or newer (go.mod says which).
  hash=$(fingerprint gen/go test/conformance/go)
  if ! command -v go >/dev/null 2>&1; then
    missing go "Go is not installed. Install Go 1.26 or newer: https://go.dev/doc/install"
  elif ! built go "$hash" || [ ! -x "$out/go/fk-conformance" ]; then
    echo "setup-polyglot: building the Go client" >&2
    (cd test/conformance/go && go build -o "../../../$out/go/fk-conformance" .)
    mark_built go "$hash"
  fi

  # The Go client library (sdk/go) and its test program, which test/sdk/go.test.ts drives.
  hash=$(fingerprint gen/go sdk/go)
  if ! command -v go >/dev/null 2>&1; then
    missing sdk-go "Go is not installed. Install Go 1.26 or newer: https://go.dev/doc/install"
  elif ! built sdk-go "$hash" || [ ! -x "$out/sdk-go/fk-sdk-probe" ]; then
    echo "setup-polyglot: building the Go client library and its probe" >&2
    (cd sdk/go && go vet ./... && go build -o "../../$out/sdk-go/fk-sdk-probe" ./cmd/fk-sdk-probe)
    # A module of its own that requires the library by its module path, as a user's program would.
    (cd sdk/go/consumer-test && go vet . && go build -o "../../../$out/sdk-go/fk-user" .)
    mark_built sdk-go "$hash"
  fi

  # sdk/go/resourcelock: the client-go resourcelock.Interface backed by fencekeeper (a module of its own,
  # which brings k8s.io/client-go), its probe, which test/integrations/client-go.test.ts drives, and a
  # user's program in a module of its own that requires it by its module path (consumer-test).
  hash=$(fingerprint gen/go sdk/go)
  if ! command -v go >/dev/null 2>&1; then
    missing client-go "Go is not installed. Install Go 1.26 or newer: https://go.dev/doc/install"
  elif ! built client-go "$hash" || [ ! -x "$out/client-go/fk-client-go-probe" ] || [ ! -x "$out/client-go/fk-client-go-user" ]; then
    echo "setup-polyglot: building sdk/go/resourcelock and its probe" >&2
    (cd sdk/go/resourcelock && go vet ./... && go build -o "../../../$out/client-go/fk-client-go-probe" ./cmd/fk-client-go-probe)
    (cd sdk/go/resourcelock/consumer-test && go vet . && go build -o "../../../../$out/client-go/fk-client-go-user" .)
    mark_built client-go "$hash"
  fi

  # controller-runtime's manager electing through sdk/go/resourcelock: its probe, a module of its own
  # (sdk/go/resourcelock/controller-runtime-probe, which brings sigs.k8s.io/controller-runtime, so that the
  # lock's module does not), which test/integrations/controller-runtime.test.ts drives.
  hash=$(fingerprint gen/go sdk/go)
  if ! command -v go >/dev/null 2>&1; then
    missing controller-runtime "Go is not installed. Install Go 1.26 or newer: https://go.dev/doc/install"
  elif ! built controller-runtime "$hash" || [ ! -x "$out/client-go/fk-controller-runtime-probe" ]; then
    echo "setup-polyglot: building sdk/go/resourcelock's controller-runtime probe" >&2
    (cd sdk/go/resourcelock/controller-runtime-probe && go vet . && go build -o "../../../../$out/client-go/fk-controller-runtime-probe" .)
    mark_built controller-runtime "$hash"
  fi
}

# Python: the conformance client's venv, the library, its wheels in a fresh venv, the tooz backend.
python_lane() {
  # Python: protobuf 7 needs Python 3.10 or newer.
  hash=$(fingerprint gen/python test/conformance/python)
  if ! command -v python3 >/dev/null 2>&1; then
    missing python "python3 is not installed. $python_hint"
  elif ! python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' >/dev/null 2>&1; then
    missing python "python3 is older than 3.10 or has no venv module ($(python3 --version 2>&1)). $python_hint"
  elif ! built python "$hash" || [ ! -x "$out/venv/bin/python" ]; then
    echo "setup-polyglot: installing the Python client's packages in $out/venv" >&2
    [ -x "$out/venv/bin/python" ] || python3 -m venv "$out/venv"
    pip=("$out/venv/bin/python" -m pip install -q --disable-pip-version-check)
    "${pip[@]}" "grpcio==${GRPCIO_VERSION}" "grpcio-status==${GRPCIO_VERSION}" \
      "protobuf==${PROTOBUF_PYTHON_VERSION}" "googleapis-common-protos==${GOOGLEAPIS_COMMON_PROTOS_VERSION}" \
      "cryptography==${CRYPTOGRAPHY_VERSION}"
    # From a copy, so that the build leaves nothing in gen/python.
    copy=$(mktemp -d)
    cp -r gen/python "$copy/"
    "${pip[@]}" --no-deps --force-reinstall "$copy/python"
    rm -rf "$copy"
    mark_built python "$hash"
  fi

  # The Python library (sdk/python, distribution fencekeeper-client), installed in the same venv beside the
  # stubs it depends on (fencekeeper-api, installed above), for test/sdk/python.test.ts.
  hash=$(fingerprint gen/python sdk/python)
  if [ -f "$out/python.missing" ]; then
    missing sdk-python "$(cat "$out/python.missing")"
  elif ! built sdk-python "$hash" || ! "$out/venv/bin/python" -c 'import fencekeeper.client' 2>/dev/null; then
    echo "setup-polyglot: installing the Python library in $out/venv" >&2
    # From a copy, so that the build leaves nothing in sdk/python; its dependencies are the venv's already.
    copy=$(mktemp -d)
    cp -r sdk/python "$copy/"
    "$out/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --force-reinstall "$copy/python"
    rm -rf "$copy"
    mark_built sdk-python "$hash"
  fi

  # The Python library as a user installs it: wheels of fencekeeper-api and fencekeeper-client, installed
  # with pip (dependencies resolved from the index, at the versions of toolchain.env) into a fresh venv,
  # $out/venv-user, which test/sdk/python.test.ts runs sdk/python/consumer-test/user.py with.
  hash=$(fingerprint gen/python sdk/python)
  if [ -f "$out/python.missing" ]; then
    missing sdk-python-wheel "$(cat "$out/python.missing")"
  elif ! built sdk-python-wheel "$hash" || [ ! -x "$out/venv-user/bin/python" ]; then
    echo "setup-polyglot: building the Python wheels and installing them in a fresh $out/venv-user" >&2
    rm -rf "$out/wheels" "$out/venv-user"
    api=$(mktemp -d)
    lib=$(mktemp -d)
    cp -r gen/python "$api/"
    cp -r sdk/python "$lib/"
    "$out/venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$out/wheels" "$api/python" "$lib/python"
    rm -rf "$api" "$lib"
    python3 -m venv "$out/venv-user"
    "$out/venv-user/bin/python" -m pip install -q --disable-pip-version-check --find-links "$out/wheels" fencekeeper-client \
      "grpcio==${GRPCIO_VERSION}" "protobuf==${PROTOBUF_PYTHON_VERSION}" "googleapis-common-protos==${GOOGLEAPIS_COMMON_PROTOS_VERSION}"
    mark_built sdk-python-wheel "$hash"
  fi

  # The tooz backend (sdk/python-tooz, distribution fencekeeper-tooz), installed as a user installs it: its
  # wheel, with the library's wheels (.conformance/wheels, built above) and tooz from the index, in a venv of
  # its own, $out/venv-tooz, so that tooz's OpenStack dependencies stay out of the library's venvs. The probe
  # that test/integrations/tooz.test.ts drives (sdk/python-tooz/tests/probe.py) runs on it, and so does a
  # user's program (sdk/python-tooz/consumer-test/user.py).
  # tooz 9.1.0, the newest: 6.3.0 no longer imports beside oslo.utils 10 (oslo_utils.secretutils.md5 is gone).
  TOOZ_VERSION=9.1.0
  hash="$(fingerprint gen/python sdk/python sdk/python-tooz) tooz ${TOOZ_VERSION}"
  if [ -f "$out/python.missing" ]; then
    missing tooz "$(cat "$out/python.missing")"
  elif [ ! -f "$out/sdk-python-wheel.stamp" ]; then
    missing tooz "the Python library's wheels were not built (see $out/sdk-python-wheel.missing)"
  elif ! built tooz "$hash" || ! "$out/venv-tooz/bin/python" -c 'import fencekeeper_tooz, tooz' 2>/dev/null; then
    echo "setup-polyglot: installing the tooz backend, its wheel with tooz ${TOOZ_VERSION}, in a fresh $out/venv-tooz" >&2
    rm -rf "$out/venv-tooz"
    copy=$(mktemp -d)
    cp -r sdk/python-tooz "$copy/"
    python3 -m venv "$out/venv-tooz"
    "$out/venv-tooz/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps -w "$copy/wheels" "$copy/python-tooz"
    if "$out/venv-tooz/bin/python" -m pip install -q --disable-pip-version-check --find-links "$out/wheels" --find-links "$copy/wheels" \
      fencekeeper-tooz "tooz==${TOOZ_VERSION}" "grpcio==${GRPCIO_VERSION}" "protobuf==${PROTOBUF_PYTHON_VERSION}" \
      "googleapis-common-protos==${GOOGLEAPIS_COMMON_PROTOS_VERSION}"; then
      mark_built tooz "$hash"
    else
      missing tooz "pip could not install fencekeeper-tooz with tooz ${TOOZ_VERSION} (see the output of scripts/setup-polyglot.sh)"
    fi
    rm -rf "$copy"
  fi
}

# Java: the stubs and the conformance client, the SDK and its probe, a user's project, the integrations.
java_lane() {
  # Java: the stubs module, installed in the local Maven repository, then the client.
  hash=$(fingerprint gen/java test/conformance/java)
  if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    missing java "java or mvn is not installed. $java_hint"
  elif ! built java "$hash" || [ ! -f test/conformance/java/target/fk-conformance.jar ]; then
    echo "setup-polyglot: building the Java stubs and client with Maven" >&2
    mvnq -f gen/java/pom.xml install
    mvnq -f test/conformance/java/pom.xml package
    mark_built java "$hash"
  fi

  # Java SDK: the client library of sdk/java, installed in the local Maven repository beside the stubs it
  # is built on, then its test probe (sdk/java/probe/target/fk-sdk-probe.jar, for test/sdk/java.test.ts).
  hash=$(fingerprint gen/java sdk/java)
  if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    missing java-sdk "java or mvn is not installed. $java_hint"
  elif ! built java-sdk "$hash" || [ ! -f sdk/java/probe/target/fk-sdk-probe.jar ]; then
    echo "setup-polyglot: building the Java SDK and its probe with Maven" >&2
    mvnq -f gen/java/pom.xml install
    mvnq -f sdk/java/pom.xml install
    mvnq -f sdk/java/probe/pom.xml package
    mark_built java-sdk "$hash"
  fi

  # The Java library as a user's project gets it: its jar installed into a throwaway local repository (the
  # machine's own, ~/.m2, serves the rest as a file:// mirror, so nothing is downloaded), then a separate
  # Maven project, sdk/java/consumer-test, built against it by its coordinates; test/sdk/java.test.ts runs
  # its ten-line program (sdk/java/consumer-test/target/fk-user.jar).
  hash=$(fingerprint gen/java sdk/java)
  if [ -f "$out/java-sdk.missing" ]; then
    missing java-sdk-user "$(cat "$out/java-sdk.missing")"
  elif ! built java-sdk-user "$hash" || [ ! -f sdk/java/consumer-test/target/fk-user.jar ]; then
    echo "setup-polyglot: installing the Java SDK into a throwaway repository and building a project against it" >&2
    throwaway=$(mktemp -d)
    printf '<settings><mirrors><mirror><id>machine-m2</id><mirrorOf>*</mirrorOf><url>file://%s/.m2/repository</url></mirror></mirrors></settings>\n' "$HOME" >"$throwaway/settings.xml"
    mvnq -s "$throwaway/settings.xml" -Dmaven.repo.local="$throwaway/repository" -f sdk/java/pom.xml install
    mvnq -s "$throwaway/settings.xml" -Dmaven.repo.local="$throwaway/repository" -f sdk/java/consumer-test/pom.xml package
    rm -rf "$throwaway"
    mark_built java-sdk-user "$hash"
  fi

  # Java integrations (sdk/java-integrations, io.fencekeeper:fencekeeper-integrations): the ShedLock
  # LockProvider and Spring Integration LockRegistry, installed in the local Maven repository beside the
  # client library they take by its coordinates, then their probe
  # (sdk/java-integrations/probe/target/fk-integrations-probe.jar) and a Spring application's project that
  # uses them (sdk/java-integrations/consumer-test/target/fk-spring-user.jar), for
  # test/integrations/java-locks.test.ts.
  hash=$(fingerprint gen/java sdk/java sdk/java-integrations)
  if [ -f "$out/java-sdk.missing" ]; then
    missing java-integrations "$(cat "$out/java-sdk.missing")"
  elif ! built java-integrations "$hash" || [ ! -f sdk/java-integrations/probe/target/fk-integrations-probe.jar ] ||
    [ ! -f sdk/java-integrations/consumer-test/target/fk-spring-user.jar ]; then
    echo "setup-polyglot: building the Java integrations (ShedLock, Spring Integration), their probe and a Spring application with Maven" >&2
    mvnq -f sdk/java-integrations/pom.xml install
    mvnq -f sdk/java-integrations/probe/pom.xml package
    mvnq -f sdk/java-integrations/consumer-test/pom.xml package
    mark_built java-integrations "$hash"
  fi
}

# The three languages build side by side: each lane is mostly a package manager waiting on downloads or
# one compiler, and they share nothing but this folder's stamps (each its own). Sequential, they took
# 118 s of a 142 s setup with warm caches; side by side, 70 s. Each lane stops at its first
# failure, as the whole script did; the script fails if any lane did.
pids=()
for lane in go_lane python_lane java_lane; do
  "$lane" &
  pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"
