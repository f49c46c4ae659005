# How the CLI's JVM starts (bin/airlock in a checkout, packaging/launcher.sh installed): its flags per
# command, and the JDK's ahead-of-time cache of the CLI (JEP 483, 514, 515): its classes loaded and linked, and
# method profiles, from a training run, so that a short command does not load and link them again
# (picocli among them: airlock-cli compiles it from its source, as the JDK cannot cache a Java 5 class).
# Two caches per install: `run`, for every short command, trained on a one-shot `airlock run` (and
# `run --server`); and `client`, for `run --server` alone, trained on that client path only: the JVM
# maps and loads every class of the cache it starts from, so the smaller one starts a call to a
# server about 30 ms sooner (README, "The CLI one-shot").
# Sourced by bin/common.sh (a checkout) and by the installed launcher (packaging/launcher.sh) once
# AIRLOCK_HOME is set; its functions need JAVA_HOME (the Java runtime) and AIRLOCK_JAR too.
# Caches live in the user's cache directory, named by a hash of the Java runtime's path and the JVM's
# flags; a cache is used only while it is newer than the runtime's modules and every jar on the class
# path, so a rebuild or an upgraded package trains it again. All of it in shell builtins: each process
# started here (stat, cksum) cost every command ~4 ms. The first `airlock run` without its cache trains it
# in the background, writing
# nothing to the terminal; the commands that follow use it once it is there. A cache that is missing
# or does not match is harmless: the JVM starts without it, and its AOT messages are off.
# AIRLOCK_AOT=0 turns it all off. (No cache directory, as without a HOME: no cache.)
airlock_cache_home=${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}
AIRLOCK_AOT_DIR=${airlock_cache_home:+$airlock_cache_home/airlock/aot/${AIRLOCK_HOME//\//_}}

# airlock_jvm_flags ARG... sets the array AIRLOCK_JVM to the JVM flags for the CLI's arguments ARG.
airlock_jvm_flags() {
  # The JVM's own warnings go to stderr, as everything chatty does: stdout belongs to the command.
  AIRLOCK_JVM=(--enable-native-access=ALL-UNNAMED -Xlog:disable -Xlog:all=warning,aot*=off,cds*=off:stderr)
  case "${1:-}" in
    # Long-running jobs and measurements get the full JIT.
    serve|mcp|bench) ;;
    # A short-lived command: C1 only and the serial collector start fastest, from the AOT cache;
    # platform threads for the agent's connection exit 0.3 s sooner (AgentClient.PLATFORM_THREADS_PROPERTY).
    *)
      AIRLOCK_JVM+=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dairlock.agent.platformThreads=true)
      airlock_aot_cache "${AIRLOCK_JVM[@]}" -- "$@"
      if [ -n "$AIRLOCK_AOT_CACHE" ]; then AIRLOCK_JVM+=(-XX:AOTCache="$AIRLOCK_AOT_CACHE"); fi
      ;;
  esac
}

# airlock_aot_cache JVM_FLAG... -- ARG... sets AIRLOCK_AOT_CACHE to the cache for these JVM flags, the jars as
# built now and the CLI's arguments ARG (`client` for `run --server`, `run` for any other command), or to
# nothing while there is none; a `run` whose cache is missing or stale starts its training, and a
# `run --server` meanwhile starts from the `run` cache when that one is current.
airlock_aot_cache() {
  local flags=() kind=run arg
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  if [ "${1:-}" = run ]; then
    for arg in "$@"; do
      if [ "$arg" = --server ]; then kind=client; break; fi
    done
  fi
  AIRLOCK_AOT_CACHE=
  [ "${AIRLOCK_AOT:-1}" != 0 ] && [ -n "$AIRLOCK_AOT_DIR" ] || return 0
  airlock_hash "$JAVA_HOME ${flags[*]}"
  local run_cache="$AIRLOCK_AOT_DIR/$AIRLOCK_HASH.aot" cache
  cache=$run_cache
  [ "$kind" = client ] && cache="${run_cache%.aot}-client.aot"
  local current=0
  airlock_aot_current "$cache" && current=1
  if [ $current = 0 ] && [ "${1:-}" = run ]; then
    airlock_aot_train "$cache" "$kind" "${flags[@]}"
    airlock_aot_current "$cache" && current=1   # trained in the foreground (AIRLOCK_AOT=foreground), or by another command
  fi
  if [ $current = 1 ]; then
    AIRLOCK_AOT_CACHE=$cache
  elif airlock_aot_current "$run_cache"; then
    AIRLOCK_AOT_CACHE=$run_cache
  fi
}

# airlock_aot_current CACHE: whether CACHE exists and nothing it was trained from changed after its
# training started: the Java runtime's modules, the CLI's jar, its lib directory and each jar in it.
airlock_aot_current() {
  local jar
  [ -f "$1" ] || return 1
  for jar in "$JAVA_HOME/lib/modules" "$AIRLOCK_JAR" "${AIRLOCK_JAR%/*}/lib" "${AIRLOCK_JAR%/*}"/lib/*.jar; do
    [ "$jar" -nt "$1" ] && return 1
  done
  return 0
}

# airlock_hash STRING sets AIRLOCK_HASH to a 32-bit hash of STRING (djb2, in decimal), in builtins.
airlock_hash() {
  local s=$1 i c h=5381
  for ((i = 0; i < ${#s}; i++)); do
    printf -v c '%d' "'${s:i:1}"
    h=$(( (h * 33 + c) & 0xffffffff ))
  done
  AIRLOCK_HASH=$h
}

# airlock_aot_train CACHE KIND JVM_FLAG... creates CACHE in the background with a training run
# (dev.airlock.cli.AotTraining KIND: for `run`, `airlock run --lang python --code pass`, a sandbox, so
# only where `airlock run` works, then `run --server` against a stand-in server; for `client`, that
# second step alone), unless
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
  local cache=$1 kind=$2; shift 2
  local partial="$cache.$BASHPID.partial" name=${cache##*/}
  # the cache takes the time its training started: a jar rebuilt while it trains leaves it stale
  : > "$cache.lock/started"
  "$JAVA_HOME/bin/java" "$@" -XX:AOTCacheOutput="$partial" -cp "$AIRLOCK_JAR" dev.airlock.cli.AotTraining "$kind" \
    >"$AIRLOCK_AOT_DIR/training-$kind.log" 2>&1 || true
  if [ -s "$partial" ]; then
    # a cache of another hash (another JDK, other flags) goes, and the log older versions kept; this one's other kind stays
    find "$AIRLOCK_AOT_DIR" -maxdepth 1 \( -name '*.aot' ! -name "${name%%[.-]*}.aot" ! -name "${name%%[.-]*}-*.aot" -o -name training.log \) \
      -delete || true
    touch -r "$cache.lock/started" "$partial" && mv -f "$partial" "$cache" || true
  fi
  rm -f "$partial" "$partial.config"
  rm -rf "$cache.lock" || true
}
