#!/usr/bin/env bash
# Installs the code generators that buf.gen.yaml runs, at the versions pinned in toolchain.env, into
# .tools/ (not committed): protoc and protoc-gen-grpc-java from Maven Central, protoc-gen-go and
# protoc-gen-go-grpc with `go install`, and grpcio-tools (the grpc_python generator) in a venv.
# Safe to run again: a tool already installed at its pinned version is left as it is.
# Needs Go, Maven and Python 3 with venv.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../toolchain.env
source toolchain.env

tools="$PWD/.tools"
bin="$tools/bin"
stamps="$tools/installed"
mkdir -p "$bin" "$stamps"

need() {
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "install-codegen: $1 is missing. $2" >&2
  exit 1
}

# installed NAME VERSION: true when NAME was installed at VERSION and is still there.
installed() { [ -e "$bin/$1" ] && [ "$(cat "$stamps/$1" 2>/dev/null)" = "$2" ]; }
mark() { echo "$2" >"$stamps/$1"; }

case "$(uname -m)" in
  x86_64 | amd64) classifier=linux-x86_64 ;;
  aarch64 | arm64) classifier=linux-aarch_64 ;;
  *) echo "install-codegen: no protoc build for $(uname -m)" >&2; exit 1 ;;
esac

# Debian's Maven 3.8 writes colour resets even with -q -B: keep its messages, drop those.
# As scripts/setup-polyglot.sh: the client compiler alone and one GC thread for these short builds.
mvnq() { MAVEN_OPTS=${MAVEN_OPTS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC} mvn -q -B "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2; }

# maven_exe NAME GROUP:ARTIFACT:VERSION: copies a native executable published on Maven Central.
maven_exe() {
  local name=$1 coords=$2 version=${2##*:} tmp
  installed "$name" "$version" && return 0
  need mvn "Install it with: sudo apt-get install -y maven"
  echo "install-codegen: $name $version from Maven Central" >&2
  tmp=$(mktemp -d)
  mvnq "org.apache.maven.plugins:maven-dependency-plugin:${MAVEN_DEPENDENCY_PLUGIN_VERSION}:copy" \
    "-Dartifact=${coords%:*}:${version}:exe:${classifier}" "-DoutputDirectory=$tmp" >&2
  install -m 0755 "$tmp"/*.exe "$bin/$name"
  rm -rf "$tmp"
  mark "$name" "$version"
}

# go_tool NAME PACKAGE VERSION
go_tool() {
  installed "$1" "$3" && return 0
  need go "Install Go 1.26 or newer: https://go.dev/doc/install"
  echo "install-codegen: $1 $3 with go install" >&2
  GOBIN="$bin" go install "$2@$3"
  mark "$1" "$3"
}

maven_exe protoc "com.google.protobuf:protoc:${PROTOC_VERSION}"
maven_exe protoc-gen-grpc-java "io.grpc:protoc-gen-grpc-java:${PROTOC_GEN_GRPC_JAVA_VERSION}"
go_tool protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION"
go_tool protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION"

# grpc_python lives inside grpcio-tools' own protoc; scripts/protoc-gen-grpc-python.py makes it a
# plugin, run from the venv where grpcio-tools is installed.
if ! installed protoc-gen-grpc-python "$GRPCIO_VERSION"; then
  need python3 "Install it with: sudo apt-get install -y python3 python3-venv"
  echo "install-codegen: grpcio-tools $GRPCIO_VERSION in .tools/venv" >&2
  [ -x "$tools/venv/bin/python" ] || python3 -m venv "$tools/venv"
  "$tools/venv/bin/python" -m pip install -q --disable-pip-version-check "grpcio-tools==${GRPCIO_VERSION}" >&2
  cat >"$bin/protoc-gen-grpc-python" <<'EOF'
#!/bin/sh
here=$(dirname "$0")
exec "$here/../venv/bin/python" "$here/../../scripts/protoc-gen-grpc-python.py" "$@"
EOF
  chmod 0755 "$bin/protoc-gen-grpc-python"
  mark protoc-gen-grpc-python "$GRPCIO_VERSION"
fi
