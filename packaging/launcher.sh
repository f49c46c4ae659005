#!/bin/bash
# Airlock's CLI as an installed copy runs it (the Debian package, the tarball): its own Java runtime
# under runtime/, its jars beside this directory; no JDK and no build. runc needs root, as ever.
set -euo pipefail
# a link (/usr/bin/airlock) is followed; a plain path costs no process: each one costs a command ~3 ms
self=$0
if [ -L "$self" ]; then self=$(readlink -f "$self"); fi
case $self in /*) ;; *) self=$PWD/$self ;; esac
AIRLOCK_HOME=${self%/bin/*}
JAVA_HOME=$AIRLOCK_HOME/runtime
AIRLOCK_JAR=$AIRLOCK_HOME/airlock-cli.jar
# the JVM's flags and AOT cache per command, as bin/airlock in a checkout
source "$AIRLOCK_HOME/bin/aot.sh"
airlock_jvm_flags "$@"
exec "$JAVA_HOME/bin/java" "${AIRLOCK_JVM[@]}" -jar "$AIRLOCK_JAR" "$@"
