#!/usr/bin/env bash
# Writes the versions pinned in toolchain.env into every manifest that names them, so that the
# generated stubs and the conformance clients are built against exactly those runtimes:
#   gen/go/go.mod and go.sum, gen/python/pyproject.toml, gen/java/pom.xml (written whole: gen/ is
#   generated), test/conformance/go/go.mod and go.sum, test/conformance/java/pom.xml (versions only),
#   sdk/go/go.mod and go.sum.
# `npm run generate` runs it after buf generate. Needs Go (go mod tidy reaches the Go module proxy
# for modules not yet in the module cache).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../toolchain.env
source toolchain.env
version=$(node -p 'require("./package.json").version')
header="Written by scripts/write-manifests.sh from toolchain.env and package.json: do not edit."

# go_requires DIR: pins the runtime modules in DIR/go.mod, then lets go mod tidy complete it.
go_requires() {
  (
    cd "$1"
    go mod edit \
      "-require=google.golang.org/protobuf@${GO_PROTOBUF_VERSION}" \
      "-require=google.golang.org/grpc@${GO_GRPC_VERSION}" \
      "-require=google.golang.org/genproto/googleapis/rpc@${GO_GENPROTO_RPC_VERSION}"
    go mod tidy
  )
}

cat >gen/go/go.mod <<EOF
// $header
module github.com/fencekeeper/fencekeeper/gen/go

go 1.24.0
EOF
go_requires gen/go

cat >gen/python/pyproject.toml <<EOF
# $header
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "fencekeeper-api"
version = "$version"
description = "fencekeeper's gRPC API for Python: messages, gRPC stubs and type stubs generated from proto/fencekeeper/v1"
license = "Apache-2.0"
requires-python = ">=3.10"
dependencies = [
  "protobuf>=${PROTOBUF_PYTHON_VERSION},<$((${PROTOBUF_PYTHON_VERSION%%.*} + 1))",
  "grpcio>=${GRPCIO_VERSION}",
  "googleapis-common-protos>=${GOOGLEAPIS_COMMON_PROTOS_VERSION}",
]

[tool.setuptools.packages.find]
where = ["src"]
namespaces = true

[tool.setuptools.package-data]
"*" = ["*.pyi"]
EOF

cat >gen/java/pom.xml <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- $header -->
<project xmlns="http://maven.apache.org/POM/4.0.0" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
    xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.fencekeeper</groupId>
  <artifactId>fencekeeper-api</artifactId>
  <version>$version</version>
  <name>fencekeeper API</name>
  <description>fencekeeper's gRPC API for Java: messages and gRPC stubs generated from proto/fencekeeper/v1</description>
  <licenses>
    <license>
      <name>Apache-2.0</name>
    </license>
  </licenses>

  <properties>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
    <maven.compiler.release>11</maven.compiler.release>
  </properties>

  <dependencies>
    <dependency>
      <groupId>com.google.protobuf</groupId>
      <artifactId>protobuf-java</artifactId>
      <version>${PROTOBUF_JAVA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>com.google.api.grpc</groupId>
      <artifactId>proto-google-common-protos</artifactId>
      <version>${PROTO_GOOGLE_COMMON_PROTOS_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>io.grpc</groupId>
      <artifactId>grpc-protobuf</artifactId>
      <version>${GRPC_JAVA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>io.grpc</groupId>
      <artifactId>grpc-stub</artifactId>
      <version>${GRPC_JAVA_VERSION}</version>
    </dependency>
  </dependencies>

  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>${MAVEN_COMPILER_PLUGIN_VERSION}</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-jar-plugin</artifactId>
        <version>${MAVEN_JAR_PLUGIN_VERSION}</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF

go_requires test/conformance/go
go_requires sdk/go

pom=test/conformance/java/pom.xml
for pin in "fencekeeper-api.version=$version" "grpc.version=$GRPC_JAVA_VERSION" \
  "maven-compiler-plugin.version=$MAVEN_COMPILER_PLUGIN_VERSION" \
  "maven-jar-plugin.version=$MAVEN_JAR_PLUGIN_VERSION" \
  "maven-dependency-plugin.version=$MAVEN_DEPENDENCY_PLUGIN_VERSION"; do
  name=${pin%%=*}
  grep -q "<$name>" "$pom" || { echo "write-manifests: $pom has no <$name> property" >&2; exit 1; }
  sed -i "s|<$name>[^<]*</$name>|<$name>${pin#*=}</$name>|" "$pom"
done

# The Java SDK and its test probe (sdk/java): versions only, as for the conformance client. The library
# is versioned with the API it is built on (the project's version: the pom's first <version>).
sed -i "0,/<version>[^<]*<\/version>/s//<version>$version<\/version>/" sdk/java/pom.xml
for pom in sdk/java/pom.xml sdk/java/probe/pom.xml sdk/java/consumer-test/pom.xml; do
  pins=("fencekeeper-api.version=$version" "grpc.version=$GRPC_JAVA_VERSION"
    "maven-compiler-plugin.version=$MAVEN_COMPILER_PLUGIN_VERSION" "maven-jar-plugin.version=$MAVEN_JAR_PLUGIN_VERSION")
  [ "$pom" != sdk/java/pom.xml ] && pins+=("maven-dependency-plugin.version=$MAVEN_DEPENDENCY_PLUGIN_VERSION")
  for pin in "${pins[@]}"; do
    name=${pin%%=*}
    grep -q "<$name>" "$pom" || { echo "write-manifests: $pom has no <$name> property" >&2; exit 1; }
    sed -i "s|<$name>[^<]*</$name>|<$name>${pin#*=}</$name>|" "$pom"
  done
done
