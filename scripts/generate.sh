#!/usr/bin/env bash
# `npm run generate`: regenerates gen/ from proto/ for every language (buf.gen.yaml), the TypeScript of
# google.rpc.ErrorInfo (buf.gen.googleapis.yaml, into gen/ts, after buf.gen.yaml has cleaned it) and of
# the gRPC health and reflection protocols (buf.gen.grpc.yaml, into gen/ts-grpc), with the code
# generators pinned in toolchain.env (installed into .tools/ first when missing), then writes those
# versions into the manifests of gen/ and test/conformance/. It also writes every file of the workspace
# and what it imports, with its comments, as one FileDescriptorSet that server reflection serves
# (server/reflection/documentation.ts). gen/ is committed: commit what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
bash scripts/install-codegen.sh
buf generate
buf generate --template buf.gen.googleapis.yaml
buf generate --template buf.gen.grpc.yaml
mkdir -p gen/descriptors
buf build --as-file-descriptor-set -o gen/descriptors/fencekeeper.binpb
bash scripts/write-manifests.sh
