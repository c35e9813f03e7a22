#!/usr/bin/env bash
# npm test: the system checks (Java, Chromium), then the type check and the
# vitest suites side by side. tsc is TypeScript 7's native compiler (about
# 10 s of CPU for the whole repository, 43 s with TypeScript 5.9); it runs
# beside vitest rather than first. Arguments go to vitest (npm test -- test/e2e).
# Fails when either fails; tsc's findings are printed after vitest's report.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/check-java.sh || exit 1
bash scripts/check-chromium.sh || exit 1

typecheck_log="$(mktemp "${TMPDIR:-/tmp}/mapflow-bridge-tsc.XXXXXX")"
trap 'rm -f "$typecheck_log"' EXIT
tsc --noEmit >"$typecheck_log" 2>&1 &
typecheck=$!

vitest run "$@"
status=$?

if wait "$typecheck"; then
  echo "tsc --noEmit: no type errors"
else
  cat "$typecheck_log"
  echo "tsc --noEmit found type errors (above)" >&2
  status=1
fi
exit "$status"
