#!/bin/sh
# Boots systemd as PID 1 of its own pid, mount, cgroup, UTS, IPC and network namespaces, on the
# Debian root $1, in fresh cgroups named $2 below this process's own in every v1 hierarchy and the
# unified one, with a /dev of its own (PackageInstallTest). What systemd-nspawn does, by hand: nspawn mounts the v1
# controllers read-only, and the server under test writes them (its sandboxes' cgroups).
set -e
root=$1
name=$2
for line in $(cat /proc/self/cgroup); do
    rest=${line#*:}
    controllers=${rest%%:*}
    path=${rest#*:}
    case "$controllers" in
        "") dir=/sys/fs/cgroup/unified$path ;;
        name=systemd) dir=/sys/fs/cgroup/systemd$path ;;
        *) dir=/sys/fs/cgroup/$controllers$path ;;
    esac
    mkdir -p "$dir/$name"
    if [ "$controllers" = cpuset ]; then
        cat "$dir/cpuset.cpus" > "$dir/$name/cpuset.cpus"
        cat "$dir/cpuset.mems" > "$dir/$name/cpuset.mems"
    fi
    echo $$ > "$dir/$name/cgroup.procs"
done
exec unshare --pid --fork --mount --cgroup --uts --ipc --net --propagation private sh -c '
set -e
cd "$0"
mount --rbind . .
cd "$0"
mount -t proc proc proc
mount -t tmpfs -o mode=755 tmpfs run
mount -t tmpfs -o mode=755,nosuid tmpfs dev
for node in null zero full random urandom tty; do
    touch dev/$node
    mount --bind /dev/$node dev/$node
done
mkdir dev/pts dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts dev/pts
ln -s pts/ptmx dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs dev/shm
ln -s /proc/self/fd dev/fd
mount -t sysfs -o ro sysfs sys
mount -t tmpfs -o mode=755 tmpfs sys/fs/cgroup
for hierarchy in $(ls /sys/fs/cgroup); do
    if [ -L /sys/fs/cgroup/$hierarchy ]; then
        ln -s "$(readlink /sys/fs/cgroup/$hierarchy)" sys/fs/cgroup/$hierarchy
        continue
    fi
    mkdir sys/fs/cgroup/$hierarchy
    case $hierarchy in
        unified) mount -t cgroup2 cgroup2 sys/fs/cgroup/unified ;;
        systemd) mount -t cgroup -o none,name=systemd cgroup sys/fs/cgroup/systemd ;;
        *) mount -t cgroup -o $hierarchy cgroup sys/fs/cgroup/$hierarchy ;;
    esac
done
mkdir -p .host
pivot_root . .host
umount -l /.host
rmdir /.host
exec env -i container=airlock-test /lib/systemd/systemd --system
' "$root"
