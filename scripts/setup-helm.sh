#!/usr/bin/env bash
# What the Helm chart's checks need (test/operations/helm.test.ts), in .tools/, at the versions pinned in
# toolchain.env: helm (built with `go install`: minutes of CPU on a fresh machine) and kubernetes-validate
# (Kubernetes' JSON schemas, from PyPI) in a venv of its own.
#
#   scripts/setup-helm.sh               install what is missing, now
#   scripts/setup-helm.sh --background  the same at the lowest CPU priority, detached, so that the tests
#                                       that run meanwhile keep the cores (setup.sh --test starts it so)
#
# One install at a time (flock): the chart's test calls this script in the foreground, which waits for
# a background install in progress and then finds everything in place.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .tools/installed .tools/bin
log=.tools/helm-install.log

if [ "${1:-}" = "--background" ]; then
  nohup nice -n 19 bash "$0" >"$log" 2>&1 </dev/null &
  exit 0
fi

# shellcheck source=../toolchain.env
. ./toolchain.env
exec 9>.tools/helm.lock
flock 9

if [ "$(cat .tools/installed/helm 2>/dev/null)" != "$HELM_VERSION" ] || [ ! -x .tools/bin/helm ]; then
  echo "setup-helm: helm $HELM_VERSION with go install" >&2
  GOBIN="$PWD/.tools/bin" GOFLAGS=-trimpath go install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
  echo "$HELM_VERSION" >.tools/installed/helm
fi

venv=.tools/kubernetes-validate
if [ "$(cat .tools/installed/kubernetes-validate 2>/dev/null)" != "$KUBERNETES_VALIDATE_VERSION" ] || [ ! -x "$venv/bin/kubernetes-validate" ]; then
  echo "setup-helm: kubernetes-validate $KUBERNETES_VALIDATE_VERSION in $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  echo "$KUBERNETES_VALIDATE_VERSION" >.tools/installed/kubernetes-validate
fi
