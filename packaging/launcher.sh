#!/bin/bash
# Airlock's CLI as an installed copy runs it (the Debian package, the tarball): its own Java runtime
# under runtime/, its jars beside this directory; no JDK and no build. runc needs root, as ever.
set -euo pipefail
self=$(readlink -f "$0")
AIRLOCK_HOME=${self%/bin/*}
JAVA_HOME=$AIRLOCK_HOME/runtime
AIRLOCK_JAR=$AIRLOCK_HOME/airlock-cli.jar
jvm=(--enable-native-access=ALL-UNNAMED -Xlog:disable -Xlog:all=warning,aot*=off,cds*=off:stderr)
case "${1:-}" in
  # long-running jobs and measurements get the full JIT
  serve|mcp|bench) ;;
  # a short-lived command starts fastest with C1 only and the serial collector, from the JDK's AOT
  # cache of short commands (bin/aot.sh), as bin/airlock in a checkout
  *)
    jvm+=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dairlock.agent.platformThreads=true)
    source "$AIRLOCK_HOME/bin/aot.sh"
    airlock_aot_cache "${1:-}" "${jvm[@]}"
    if [ -n "$AIRLOCK_AOT_CACHE" ]; then jvm+=(-XX:AOTCache="$AIRLOCK_AOT_CACHE"); fi
    ;;
esac
exec "$JAVA_HOME/bin/java" "${jvm[@]}" -jar "$AIRLOCK_JAR" "$@"
