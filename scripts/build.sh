#!/usr/bin/env bash
# Compiles the TypeScript to JavaScript when a source is newer than the last build (a stamp file, so
# that an unchanged checkout costs one `find`):
# - dist/: the server and the CLI, which `npm start`, the container image and bin/fencekeeper.js run,
#   and the web console, bundled by esbuild (scripts/bundle.sh);
# - client/dist/: the SDK package @fencekeeper/client (client/tsconfig.json), compiled by tsc.
# scripts/setup.sh runs it; so do the tests that run compiled code.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=dist/.built
sources=()
for path in server cli client console gen/ts gen/ts-grpc tsconfig.json tsconfig.build.json package-lock.json scripts/bundle.sh; do
  if [ -e "$path" ]; then sources+=("$path"); fi
done
fresh() {
  [ -f "$stamp" ] && [ -f client/dist/client/index.js ] &&
    [ -z "$(find "${sources[@]}" -path client/dist -prune -o -type f -newer "$stamp" -print -quit)" ]
}
fresh && exit 0

# One build at a time (setup and tests may start together); the next one finds it done.
mkdir -p dist
exec 9>dist/.lock
command -v flock >/dev/null 2>&1 && flock 9
fresh && exit 0

echo "fencekeeper: compiling TypeScript to dist/ and client/dist/" >&2
# Stamped with the time the build started: a source edited meanwhile makes the next run build again.
touch dist/.building
bash scripts/bundle.sh
# `tsc -p`, not `tsc -b`: -b judges a project up to date from its root files' times alone, and would keep
# an old client/dist/ after an edit to any other file. -p with incremental compares every file's contents.
npx tsc -p client/tsconfig.json
mv dist/.building "$stamp"
