# The JDK's ahead-of-time cache of the CLI (JEP 483, 514, 515): its classes loaded and linked, and
# method profiles, from a training run of a one-shot `airlock run` (and of `run --server`), so that a short command does not
# load and link them again (picocli among them: airlock-cli compiles it from its source, as the JDK cannot cache a Java 5 class).
# Sourced by bin/common.sh (a checkout) and by the installed launcher (packaging/launcher.sh) once
# AIRLOCK_HOME is set; its functions need JAVA_HOME (the Java runtime) and AIRLOCK_JAR too.
# One cache per install, in the user's cache directory, named by a fingerprint of the Java runtime, the
# JVM's flags and every jar on the class path (path, size, time), so a rebuild, an upgraded package or
# another JDK gets a new one. The first `airlock run` without one trains it in the background, writing
# nothing to the terminal; the commands that follow use it once it is there. A cache that is missing
# or does not match is harmless: the JVM starts without it, and its AOT messages are off.
# AIRLOCK_AOT=0 turns it all off. (No cache directory, as without a HOME: no cache.)
airlock_cache_home=${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}
AIRLOCK_AOT_DIR=${airlock_cache_home:+$airlock_cache_home/airlock/aot/${AIRLOCK_HOME//\//_}}

# airlock_aot_cache COMMAND JVM_FLAG... sets AIRLOCK_AOT_CACHE to the cache for these flags and the jars
# as built now, or to nothing while there is none; a `run` without one starts its training.
airlock_aot_cache() {
  local command=$1; shift
  AIRLOCK_AOT_CACHE=
  [ "${AIRLOCK_AOT:-1}" != 0 ] && [ -n "$AIRLOCK_AOT_DIR" ] || return 0
  local fingerprint cache
  fingerprint=$({ echo "$JAVA_HOME $*"; stat -c '%n %s %Y' "$JAVA_HOME/lib/modules" "$AIRLOCK_JAR" "${AIRLOCK_JAR%/*}"/lib/*.jar; } | cksum)
  cache="$AIRLOCK_AOT_DIR/${fingerprint%% *}.aot"
  if [ ! -f "$cache" ] && [ "$command" = run ]; then
    airlock_aot_train "$cache" "$@"
  fi
  if [ -f "$cache" ]; then
    AIRLOCK_AOT_CACHE=$cache
  fi
}

# airlock_aot_train CACHE JVM_FLAG... creates CACHE in the background with a training run
# (dev.airlock.cli.AotTraining: `airlock run --lang python --code pass`, a sandbox, so only where
# `airlock run` works; then `run --server` against a stand-in server), unless
# another command is training it already; with AIRLOCK_AOT=foreground it waits for the training
# (for benchmarks, which must not measure beside it). Older caches of this install go when it is done.
airlock_aot_train() {
  local cache=$1; shift
  mkdir -p "$AIRLOCK_AOT_DIR" || return 0
  # a lock left by a training run that was killed lets a later one try again
  find "$AIRLOCK_AOT_DIR" -maxdepth 1 -name '*.lock' -mmin +15 -exec rm -rf {} + 2>/dev/null || true
  if ! mkdir "$cache.lock" 2>/dev/null; then
    if [ "${AIRLOCK_AOT:-}" = foreground ]; then
      local waited=0
      while [ -d "$cache.lock" ] && [ $waited -lt 600 ]; do sleep 1; waited=$((waited + 1)); done
    fi
    return 0
  fi
  if [ "${AIRLOCK_AOT:-}" = foreground ]; then
    airlock_aot_training_run "$cache" "$@" </dev/null >/dev/null 2>&1
  else
    airlock_aot_training_run "$cache" "$@" </dev/null >/dev/null 2>&1 &
  fi
}

airlock_aot_training_run() {
  local cache=$1; shift
  local partial="$cache.$BASHPID.partial"
  "$JAVA_HOME/bin/java" "$@" -XX:AOTCacheOutput="$partial" -cp "$AIRLOCK_JAR" dev.airlock.cli.AotTraining \
    >"$AIRLOCK_AOT_DIR/training.log" 2>&1 || true
  if [ -s "$partial" ]; then
    find "$AIRLOCK_AOT_DIR" -maxdepth 1 -name '*.aot' ! -name "$(basename "$cache")" -delete || true
    mv -f "$partial" "$cache" || true
  fi
  rm -f "$partial" "$partial.config"
  rmdir "$cache.lock" || true
}
