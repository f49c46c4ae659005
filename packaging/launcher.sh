#!/bin/sh
# Airlock's CLI as an installed copy runs it (the Debian package, the tarball): its own Java runtime
# under runtime/, its jars beside this directory; no JDK and no build. runc needs root, as ever.
set -e
self=$(readlink -f "$0")
root=${self%/bin/*}
case "${1:-}" in
  # long-running jobs and measurements get the full JIT
  serve|mcp|bench) flags= ;;
  # a short-lived command starts fastest with C1 only and the serial collector (as bin/airlock in a checkout)
  *) flags="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dairlock.agent.platformThreads=true" ;;
esac
# shellcheck disable=SC2086
exec "$root/runtime/bin/java" --enable-native-access=ALL-UNNAMED -Xlog:disable -Xlog:all=warning,aot*=off,cds*=off:stderr $flags \
  -jar "$root/airlock-cli.jar" "$@"
