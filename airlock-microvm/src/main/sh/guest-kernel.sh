#!/bin/sh
# The microVM guest's kernel, from Debian's packages only: downloads the exact linux-image package
# (never installing it as the host's kernel), unpacks it, extracts the uncompressed vmlinux from
# vmlinuz (QEMU boots that ELF directly, through PVH, in less than half the time of vmlinuz under
# TCG), and keeps the modules the guest needs with everything they depend on.
#
# Usage: guest-kernel.sh <cache dir>
# Prints the directory (<cache>/<package>.<layout>) that holds: vmlinux, release (the kernel release), modules/*.ko and
# modules.load (their names, dependencies first: the order to load them in).
#
# The package is the one Debian's linux-image-amd64 depends on now, or AIRLOCK_GUEST_KERNEL_PACKAGE
# (an exact name such as linux-image-6.1.0-57-amd64). Idempotent: once a kernel is in the cache it
# is reused without asking apt, unless AIRLOCK_GUEST_KERNEL_PACKAGE names another one.
set -eu

# The modules the guest loads: the virtio-mmio transport (QEMU's microvm machine has no PCI), the
# agent's virtio-serial port, the 9p file system that shares the host's /usr read-only, and the
# virtio block device and squashfs that carry a stored image's files (a read-only disk). Nothing
# else: under software emulation each module costs boot time.
WANTED="virtio_mmio virtio_console 9pnet_virtio 9p virtio_blk squashfs"
# The name of this preparation's layout (its module list): a kernel prepared for another list lives
# in another directory, so drivers of another version sharing the cache never see this one's.
LAYOUT=mmio-blk

fail() {
    echo "guest-kernel.sh: $*" >&2
    exit 1
}

[ $# -eq 1 ] || { echo "usage: $0 <cache dir>" >&2; exit 2; }
cache=$1
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# The fast path: the kernel prepared before, when no other one is asked for.
if [ -z "${AIRLOCK_GUEST_KERNEL_PACKAGE:-}" ] && [ -f "$cache/current.$LAYOUT" ]; then
    dir="$cache/$(cat "$cache/current.$LAYOUT").$LAYOUT"
    if [ -f "$dir/ready" ]; then
        echo "$dir"
        exit 0
    fi
fi

command -v apt-get >/dev/null 2>&1 || fail "apt-get is missing: the guest kernel comes from Debian's packages"
for tool in dpkg xz flock; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing: install it (apt-get install $tool)"
done

kernel_of_metapackage() {
    apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}
package=${AIRLOCK_GUEST_KERNEL_PACKAGE:-}
if [ -z "$package" ]; then
    package=$(kernel_of_metapackage)
    if [ -z "$package" ] && [ "$(id -u)" -eq 0 ]; then
        # A machine whose package lists were never fetched knows no package at all.
        apt-get update -qq >/dev/null 2>&1 || true
        package=$(kernel_of_metapackage)
    fi
    [ -n "$package" ] || fail "cannot tell which kernel package linux-image-amd64 depends on: run 'apt-get update' first, or set AIRLOCK_GUEST_KERNEL_PACKAGE to an exact package name"
fi
case $package in
    linux-image-*-amd64) ;;
    *) fail "'$package' is not an exact linux-image-<version>-amd64 package name" ;;
esac
dir="$cache/$package.$LAYOUT"

# One preparation at a time; whoever waited finds it done.
exec 9>"$cache/.lock"
flock 9
if [ ! -f "$dir/ready" ]; then
    work=$(mktemp -d "$cache/.work.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && apt-get download -q "$package" >download.log 2>&1) \
        || fail "apt-get download $package failed: $(tail -n 3 "$work/download.log")"
    dpkg -x "$work"/"$package"_*.deb "$work/root"

    release=${package#linux-image-}
    vmlinuz="$work/root/boot/vmlinuz-$release"
    [ -f "$vmlinuz" ] || fail "$package has no /boot/vmlinuz-$release"
    # extract-vmlinux: the compressed kernel starts at the xz magic (FD 37 7A 58 5A 00) inside the
    # bzImage; xz complains about what follows it, so the ELF magic of the result is what counts.
    offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -n 1 | cut -d: -f1)
    [ -n "$offset" ] || fail "no xz payload in $vmlinuz: this script expects Debian's xz-compressed amd64 kernel"
    tail -c +"$((offset + 1))" "$vmlinuz" | xz -dcq >"$work/vmlinux" 2>/dev/null || true
    [ "$(head -c 4 "$work/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] \
        || fail "the xz payload of $vmlinuz did not decompress to an ELF vmlinux"

    # Module dependencies, from each module's own .modinfo ("depends=a,b"): the package ships no
    # modules.dep (depmod writes it at install time).
    moddir="$work/root/lib/modules/$release"
    mkdir -p "$work/out/modules"
    : >"$work/out/modules.load"
    path_of() {
        # modules.order lists kernel/.../name.ko; a file's name may use - where the module name has _
        grep -E "/$(echo "$1" | sed 's/[-_]/[-_]/g')\.ko$" "$moddir/modules.order" | head -n 1
    }
    # (sh has no local variables: the recursion overwrites rel and deps, so rel is looked up again)
    add() {
        grep -qx "$1" "$work/out/modules.load" && return 0
        rel=$(path_of "$1")
        [ -n "$rel" ] || return 0          # built into the kernel: nothing to load
        deps=$(tr '\0' '\n' <"$moddir/$rel" | sed -n 's/^depends=//p' | head -n 1 | tr ',' ' ')
        for dep in $deps; do
            add "$dep"
        done
        cp "$moddir/$(path_of "$1")" "$work/out/modules/$1.ko"
        echo "$1" >>"$work/out/modules.load"
    }
    for module in $WANTED; do
        [ -n "$(path_of "$module")" ] || fail "$package has no module $module"
        add "$module"
    done

    mv "$work/vmlinux" "$work/out/vmlinux"
    echo "$release" >"$work/out/release"
    touch "$work/out/ready"
    rm -rf "$dir"
    mv "$work/out" "$dir"
fi
echo "$package" >"$cache/current.$LAYOUT.tmp"
mv -f "$cache/current.$LAYOUT.tmp" "$cache/current.$LAYOUT"
echo "$dir"
