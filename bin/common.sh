# Shared by bin/airlock and bin/test: find Java 25, install missing OS packages, build when stale.
# Everything chatty goes to stderr: stdout belongs to the command being run. Every CLI command pays for
# what runs here, so it starts few programs: shell builtins where they do (no dirname, cut, java -version).

airlock_bin_dir=${BASH_SOURCE[0]%/*}
[ "$airlock_bin_dir" = "${BASH_SOURCE[0]}" ] && airlock_bin_dir=.
AIRLOCK_HOME=$(cd "$airlock_bin_dir/.." && pwd)

airlock_find_java() {
  local candidate
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25* /usr/lib/jvm/java-25* /usr/lib/jvm/jdk-25*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] || continue
    AIRLOCK_JAVA_MAJOR=$(airlock_java_major "$candidate")
    if [ "$AIRLOCK_JAVA_MAJOR" -ge 25 ] 2>/dev/null; then
      export JAVA_HOME="$candidate"
      return 0
    fi
  done
  echo "airlock: Java 25 or newer is needed and none was found: install a JDK 25 (for example Temurin 25) or set JAVA_HOME to one" >&2
  exit 3
}

# airlock_java_major JDK prints the feature version (25...) of the JDK at JDK, from its release file: starting
# that JVM just to ask (java -version) would cost every command a JVM start. A JDK without one is asked.
airlock_java_major() {
  local line version=""
  if [ -r "$1/release" ]; then
    while IFS= read -r line; do
      case "$line" in JAVA_VERSION=*) version=${line#JAVA_VERSION=}; version=${version//\"/}; break ;; esac
    done < "$1/release"
  fi
  if [ -z "$version" ]; then
    version=$("$1/bin/java" -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
  fi
  version=${version#1.}
  echo "${version%%[!0-9]*}"
}

# airlock_ensure_packages CMD:PACKAGE ... installs PACKAGE (Debian) when CMD is missing; a CMD
# that starts with / is a path that must exist (a Python module's directory, say).
airlock_ensure_packages() {
  local missing=() pair
  for pair in "$@"; do
    case "${pair%%:*}" in
      /*) [ -e "${pair%%:*}" ] || missing+=("${pair#*:}") ;;
      *) command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}") ;;
    esac
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "airlock: missing OS packages: ${missing[*]}: install them (as root: apt-get install ${missing[*]})" >&2
    exit 3
  fi
  echo "airlock: installing ${missing[*]} ..." >&2
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2; then
    echo "airlock: could not install ${missing[*]} with apt-get" >&2
    exit 3
  fi
}

AIRLOCK_JAR="$AIRLOCK_HOME/airlock-cli/target/airlock-cli.jar"

# Builds the CLI when its jar is missing or older than any source, pom or resource.
airlock_build_if_stale() {
  if [ -f "$AIRLOCK_JAR" ] && [ -z "$(find "$AIRLOCK_HOME" -path '*/target' -prune -o -path '*/node_modules' -prune -o -path '*/.git' -prune -o \
        \( -name '*.java' -o -name '*.c' -o -name '*.sh' -o -name 'pom.xml' -o -name 'package-lock.json' -o -path '*/src/main/resources/*' \) -newer "$AIRLOCK_JAR" -print -quit)" ]; then
    return 0
  fi
  local log="$AIRLOCK_HOME/target/airlock-build.log"
  mkdir -p "$AIRLOCK_HOME/target"
  echo "airlock: building (mvn install, tests skipped; a first build takes a few minutes; its log: $log) ..." >&2
  # one line per module as it starts, the whole of Maven's output in the log
  if ! (cd "$AIRLOCK_HOME" && set -o pipefail && mvn -B -Dstyle.color=never install -DskipTests 2>&1 | tee "$log" |
        sed -un '/^\[INFO\] Building Airlock/{s/^\[INFO\] Building \(Airlock[^:]*\).* \[\([0-9]*\/[0-9]*\)\]$/airlock:   \2 \1/;s/ *$//;p}' >&2); then
    echo "airlock: build failed; the end of $log:" >&2
    tail -n 25 "$log" >&2
    exit 4
  fi
}

# The JDK's ahead-of-time cache of the CLI (JEP 483, 514, 515): its classes loaded and linked, and
# method profiles, from a training run of a one-shot `airlock run`, so that a short command does not
# load and link them again (picocli among them: airlock-cli compiles it from its source, as the JDK cannot cache a Java 5 class).
# One cache per install, in the user's cache directory, named by a fingerprint of the JDK, the JVM's
# flags and every jar on the class path (path, size, time), so a rebuild or another JDK gets a new one.
# The first `airlock run` without one trains it in the background, writing nothing to the terminal;
# the commands that follow use it once it is there. A cache that is missing or does not match is
# harmless: the JVM starts without it, and its AOT messages are off. AIRLOCK_AOT=0 turns it all off.
# (No cache directory, as without a HOME: no cache.)
airlock_cache_home=${XDG_CACHE_HOME:-${HOME:+$HOME/.cache}}
AIRLOCK_AOT_DIR=${airlock_cache_home:+$airlock_cache_home/airlock/aot/${AIRLOCK_HOME//\//_}}

# airlock_aot_file JVM_FLAG... sets AIRLOCK_AOT_FILE, the cache for these flags and the jars as built now.
airlock_aot_file() {
  local fingerprint
  fingerprint=$({ echo "$JAVA_HOME $AIRLOCK_JAVA_MAJOR $*"; stat -c '%n %s %Y' "$AIRLOCK_JAR" "${AIRLOCK_JAR%/*}"/lib/*.jar; } | cksum)
  AIRLOCK_AOT_FILE="$AIRLOCK_AOT_DIR/${fingerprint%% *}.aot"
}

# airlock_aot_train CACHE JVM_FLAG... creates CACHE in the background with a training run of
# `airlock run --lang python --code pass` (a sandbox, so only where `airlock run` works), unless
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
  "$JAVA_HOME/bin/java" "$@" -XX:AOTCacheOutput="$partial" -jar "$AIRLOCK_JAR" run --lang python --code pass \
    >"$AIRLOCK_AOT_DIR/training.log" 2>&1 || true
  if [ -s "$partial" ]; then
    find "$AIRLOCK_AOT_DIR" -maxdepth 1 -name '*.aot' ! -name "$(basename "$cache")" -delete || true
    mv -f "$partial" "$cache" || true
  fi
  rm -f "$partial" "$partial.config"
  rmdir "$cache.lock" || true
}
