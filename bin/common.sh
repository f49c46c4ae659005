# Shared by bin/airlock and bin/test: find Java 25, install missing OS packages, build when stale.
# Everything chatty goes to stderr: stdout belongs to the command being run. Every CLI command pays for
# what runs here, so it starts few programs: shell builtins where they do (no dirname, cut, java -version).

airlock_bin_dir=${BASH_SOURCE[0]%/*}
[ "$airlock_bin_dir" = "${BASH_SOURCE[0]}" ] && airlock_bin_dir=.
# the checkout, links resolved (cd -P), without a subshell: each process a command starts here costs it ~3 ms
airlock_cwd=$PWD
CDPATH= cd -P "$airlock_bin_dir/.." && AIRLOCK_HOME=$PWD
cd "$airlock_cwd" || { echo "airlock: cannot change back to the working directory $airlock_cwd" >&2; exit 3; }
unset airlock_cwd

airlock_find_java() {
  local candidate
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25* /usr/lib/jvm/java-25* /usr/lib/jvm/jdk-25*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] || continue
    airlock_java_major "$candidate"
    if [ "$AIRLOCK_JAVA_MAJOR" -ge 25 ] 2>/dev/null; then
      export JAVA_HOME="$candidate"
      return 0
    fi
  done
  echo "airlock: Java 25 or newer is needed and none was found: install a JDK 25 (for example Temurin 25) or set JAVA_HOME to one" >&2
  exit 3
}

# airlock_java_major JDK sets AIRLOCK_JAVA_MAJOR to the feature version (25...) of the JDK at JDK, from its
# release file: starting that JVM just to ask (java -version) would cost every command a JVM start. A JDK
# without one is asked.
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
  AIRLOCK_JAVA_MAJOR=${version%%[!0-9]*}
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

# The CLI's JVM flags and AOT cache (bin/aot.sh), shared with the installed launcher (packaging/launcher.sh)
source "$airlock_bin_dir/aot.sh"
