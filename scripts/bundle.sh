#!/usr/bin/env bash
# Builds what users run into dist/, with esbuild (scripts/build.sh and deploy/Dockerfile run it):
# - dist/server/main.js and dist/cli/main.js, the server and the fencekeeper command (the files of
#   tsconfig.build.json): each one JavaScript module with the code it imports, ours and the packages'.
#   A start loads one file instead of about 1,300 (ours and node_modules'), and most of a start's CPU was
#   loading them: a server serves after 0.6 s of CPU where it took 0.9 (bench/startup-time.ts). Left
#   in node_modules: etcd3, which reads its .proto files from its own folder at run time, and the gRPC
#   packages it loads them with, so that the server and etcd3 share one grpc-js (credentials cross).
#   The command is split (esbuild's code splitting, chunks beside dist/cli/main.js): what only `serve`
#   runs (the server, etcd3 with its .proto files) is a chunk of its own, loaded by `serve` alone, so
#   that `fencekeeper describe` or `--help` load the client and no more: 0.64 → 0.32 s and 0.55 → 0.22 s
#   of CPU a run on this 2-core machine. The server loads everything it bundles, and is not split
#   (split, it started for the same CPU).
# - dist/console/: the web console's page and its script, bundled for the browser.
# Types are not checked here: `npx tsc -p .` checks everything (CI's typecheck).
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t entries < <(node -e '
  const fs = require("fs");
  const build = JSON.parse(fs.readFileSync("tsconfig.build.json", "utf8").replace(/^\s*\/\/.*$/gm, ""));
  console.log(build.files.join("\n"));
')
# CommonJS packages in an ES module: esbuild calls require() for their imports of Node's modules.
require_shim="import { createRequire as __fkRequire } from 'node:module'; const require = __fkRequire(import.meta.url);"
# What an older build compiled file by file would otherwise stay beside the bundles.
rm -rf dist/server dist/cli dist/client dist/gen dist/.tsbuildinfo
for entry in "${entries[@]}"; do
  out=(--outfile="dist/${entry%.ts}.js")
  [ "$entry" = cli/main.ts ] && out=(--splitting --outdir=dist/cli)
  npx esbuild "$entry" --bundle --platform=node --format=esm --target=node20 \
    --external:etcd3 --external:@grpc/grpc-js --external:@grpc/proto-loader \
    --banner:js="$require_shim" --log-level=warning "${out[@]}"
done

mkdir -p dist/console
npx esbuild console/app.ts --bundle --format=esm --target=es2022 --minify --log-level=warning --outfile=dist/console/app.js
cp console/index.html dist/console/index.html
