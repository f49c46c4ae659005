#!/bin/sh
# Compiles the in-sandbox agent as a static binary, so it runs in any image (no libc needed there).
# Another in-sandbox program (the microVM guest's init) is built the same way from its own source.
# Usage: build.sh <output path> [<C source>, default agent.c beside this script]
set -eu

if [ $# -ne 1 ] && [ $# -ne 2 ]; then
    echo "usage: $0 <output path> [<C source>]" >&2
    exit 2
fi
out=$1
src=${2:-$(dirname "$0")/agent.c}
warnings="-std=c11 -Wall -Wextra"

# The agent (agent.c) against musl: a static binary of ~100 kB instead of glibc's ~850, which every
# sandbox executes and forks (its spare supervisor, each command's supervisor): on this project's
# 2-core host that alone raised the idle creates from ~82 to ~107 a second (README, the goals of issue
# 36). musl-gcc is required for it, never swapped for cc behind the caller's back: bin/airlock and
# bin/test install musl-tools. The launcher (launch.c, host-side, needing kernel headers musl-gcc does
# not see) and the microVM guest's init are built with cc and glibc, the agent needing no NSS or dlopen either.
if [ "${src##*/}" = agent.c ]; then
    if ! command -v musl-gcc >/dev/null 2>&1; then
        echo "build.sh: musl-gcc not found: the agent is built against musl; install musl-tools (apt-get install musl-tools)" >&2
        exit 1
    fi
    compile="musl-gcc -static -Os -s"
elif command -v cc >/dev/null 2>&1; then
    compile="cc -static -O2 -s"
else
    echo "build.sh: no C compiler found: install gcc to build $src" >&2
    exit 1
fi

mkdir -p "$(dirname "$out")"
# shellcheck disable=SC2086 # word splitting of the flag lists is intended
if ! $compile $warnings -o "$out.tmp" "$src"; then
    rm -f "$out.tmp"
    echo "build.sh: compiling $src with '$compile' failed" >&2
    exit 1
fi
chmod 0755 "$out.tmp"
# Its SHA-256 beside it, for the host to name and find an installed copy without reading the program (AgentBinary).
sha256sum "$out.tmp" | cut -d' ' -f1 > "$out.sha256"
mv -f "$out.tmp" "$out"
