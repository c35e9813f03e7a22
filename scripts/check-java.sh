#!/usr/bin/env bash
# DynamoDB Local (the local ledger) is a Java program and needs Java 17 or newer.
# Checks for it; under CI=true on Debian/Ubuntu it installs a runtime when missing.
set -euo pipefail
java_major() {
  command -v java >/dev/null 2>&1 || { echo 0; return; }
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
if [ "$(java_major)" -ge 17 ] 2>/dev/null; then exit 0; fi
if [ "${CI:-}" = "true" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Java 17+ not found: installing a headless Java runtime with apt-get (CI=true)." >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq default-jre-headless >&2
  if [ "$(java_major)" -ge 17 ] 2>/dev/null; then exit 0; fi
fi
cat >&2 <<'MSG'
mapflow-bridge needs a Java 17 (or newer) runtime for DynamoDB Local, the local ledger.
Install one, for example:
  Debian/Ubuntu:  sudo apt-get install -y default-jre-headless   (or openjdk-17-jre-headless)
  macOS:          brew install openjdk@17
  Windows:        winget install EclipseAdoptium.Temurin.17.JRE
then run the command again.
MSG
exit 1
