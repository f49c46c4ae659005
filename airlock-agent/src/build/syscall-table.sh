#!/bin/sh
# Writes the x86_64 system call table, "<name> <number>" a line, from the kernel's user-space headers
# (linux-libc-dev, the headers the guest init and agent are compiled against). SeccompFilter reads it
# to turn the names of the shared seccomp allow-list into the numbers of a BPF program.
# Usage: syscall-table.sh <output path>
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 <output path>" >&2
    exit 2
fi
out=$1
for header in /usr/include/x86_64-linux-gnu/asm/unistd_64.h /usr/include/asm/unistd_64.h; do
    if [ -f "$header" ]; then
        mkdir -p "$(dirname "$out")"
        sed -n 's/^#define __NR_\([a-z0-9_]*\)[ 	]\{1,\}\([0-9]\{1,\}\)[ 	]*$/\1 \2/p' "$header" > "$out.tmp"
        # a sanity check that this is x86_64's table: read is 0, getpid 39, clone3 435
        if ! grep -qx 'read 0' "$out.tmp" || ! grep -qx 'getpid 39' "$out.tmp" || ! grep -qx 'clone3 435' "$out.tmp"; then
            rm -f "$out.tmp"
            echo "syscall-table.sh: $header is not the x86_64 system call table of a Linux 5.3 or later kernel" >&2
            exit 1
        fi
        mv -f "$out.tmp" "$out"
        exit 0
    fi
done
echo "syscall-table.sh: no x86_64 kernel headers (asm/unistd_64.h): install linux-libc-dev" >&2
exit 1
