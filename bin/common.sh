# Shared by bin/airlock and bin/test: find Java 25, install missing OS packages, build when stale.
# Everything chatty goes to stderr: stdout belongs to the command being run.

AIRLOCK_HOME=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

airlock_find_java() {
  local candidate
  for candidate in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25* /usr/lib/jvm/java-25* /usr/lib/jvm/jdk-25*; do
    [ -n "$candidate" ] && [ -x "$candidate/bin/java" ] || continue
    if "$candidate/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; then
      export JAVA_HOME="$candidate"
      return 0
    fi
  done
  echo "airlock: Java 25 or newer is needed and none was found: install a JDK 25 (for example Temurin 25) or set JAVA_HOME to one" >&2
  exit 3
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
        \( -name '*.java' -o -name '*.c' -o -name '*.sh' -o -name 'pom.xml' -o -path '*/src/main/resources/*' \) -newer "$AIRLOCK_JAR" -print -quit)" ]; then
    return 0
  fi
  echo "airlock: building (mvn install, tests skipped) ..." >&2
  (cd "$AIRLOCK_HOME" && mvn -B -q -Dstyle.color=never install -DskipTests >&2) || { echo "airlock: build failed" >&2; exit 4; }
}
