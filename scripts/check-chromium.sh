#!/usr/bin/env bash
# The jobs console is tested in a real browser: headless Chromium from the
# system's packages (never a browser downloaded by npm). Checks for it; under
# CI=true on Debian/Ubuntu it installs Debian's chromium when missing.
# Never fails the test run: without Chromium the console tests skip and say why.
set -uo pipefail
find_chromium() {
  for candidate in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
  done
  return 1
}
if find_chromium >/dev/null; then exit 0; fi
if [ "${CI:-}" = "true" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Chromium not found: installing Debian's chromium with apt-get (CI=true) for the console tests." >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >&2
  if find_chromium >/dev/null; then exit 0; fi
fi
cat >&2 <<'MSG'
Chromium was not found, so the jobs console tests (test/e2e/console.test.ts) will be skipped.
To run them, install it (or set CHROMIUM_PATH to a Chromium/Chrome binary):
  Debian/Ubuntu:  sudo apt-get install -y chromium
MSG
exit 0
