#!/usr/bin/env python3
"""What a microVM memory snapshot would cost on this host's QEMU, before the driver has one (issue 35).

Boots the prepared guest kernel (/var/cache/airlock/microvm, `airlock doctor` makes it) on the
microvm machine under TCG with a busybox initramfs that holds 64 MiB of random bytes in a tmpfs
and then prints a count and 6 bytes of /dev/urandom every second; its RAM is a memory-backend-file
shared on /dev/shm. Then: stop, migrate with x-ignore-shared (the device state only) to a file,
copy the RAM file (sparse), cont; start two forks from the copy with the RAM mapped privately
(share=off: copy-on-write, the pages none wrote shared through the page cache) and -incoming.
Prints each step's time, the forks' counts and random bytes (the same bytes in both: the guest
kernel's RNG state is in the snapshot), and each QEMU's Rss and Pss. Needs root, busybox-static,
cpio, qemu-system-x86. No 9p device: QEMU 7.2 refuses to migrate while a 9p export is mounted.

    sudo python3 airlock-microvm/src/test/sh/vm-snapshot.py
"""
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

INIT = """#!/bin/busybox sh
/bin/busybox mkdir -p /proc /dev /tmp
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs dev /dev
/bin/busybox mount -t tmpfs -o size=100m tmpfs /tmp
/bin/busybox head -c 67108864 /dev/urandom > /tmp/held
i=0
while true; do
  i=$((i+1))
  echo "count $i rnd $(/bin/busybox head -c 6 /dev/urandom | /bin/busybox od -An -tx1 | /bin/busybox tr -d ' \\n')"
  /bin/busybox sleep 1
done
"""


def qmp(path):
    s = socket.socket(socket.AF_UNIX)
    for _ in range(100):
        try:
            s.connect(path)
            break
        except OSError:
            time.sleep(0.05)
    f = s.makefile("rw")
    json.loads(f.readline())

    def cmd(name, **args):
        f.write(json.dumps({"execute": name, "arguments": args} if args else {"execute": name}) + "\n")
        f.flush()
        while True:
            r = json.loads(f.readline())
            if "return" in r or "error" in r:
                if "error" in r:
                    raise RuntimeError(name + ": " + r["error"]["desc"])
                return r["return"]

    cmd("qmp_capabilities")
    return cmd


def memory(pid):
    values = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Rss", "Pss"):
                values[k] = int(v.split()[0]) // 1024
    return values


def main():
    kernel = sorted(glob.glob("/var/cache/airlock/microvm/*/vmlinux"))[-1]
    khz = next(int(float(l.split(":")[1]) * 1000) for l in open("/proc/cpuinfo") if l.startswith("cpu MHz"))
    work = tempfile.mkdtemp(prefix="airlock-vm-snapshot-")
    ram = "/dev/shm/" + os.path.basename(work) + "-ram"
    root = os.path.join(work, "root")
    os.makedirs(os.path.join(root, "bin"))
    shutil.copy("/bin/busybox", os.path.join(root, "bin/busybox"))
    with open(os.path.join(root, "init"), "w") as f:
        f.write(INIT)
    os.chmod(os.path.join(root, "init"), 0o755)
    initrd = os.path.join(work, "init.cpio")
    subprocess.run("cd %s && find . | cpio -o -H newc > %s 2>/dev/null" % (root, initrd), shell=True, check=True)
    procs = []

    def qemu(name, mem_path, share, incoming):
        cmd = ["qemu-system-x86_64", "-M", "microvm", "-cpu", "max", "-accel", "tcg", "-m", "256M", "-smp", "1", "-nodefaults",
               "-no-user-config", "-nographic", "-no-reboot",
               "-object", "memory-backend-file,id=mem,size=256M,mem-path=%s,share=%s" % (mem_path, share), "-machine", "memory-backend=mem",
               "-kernel", kernel, "-initrd", initrd,
               "-append", "console=ttyS0 quiet panic=-1 no_timer_check pci=off tsc_early_khz=%d tsc=reliable" % khz,
               "-serial", "file:" + os.path.join(work, name + ".out"), "-qmp", "unix:%s,server=on,wait=off" % os.path.join(work, name + ".qmp")]
        if incoming:
            cmd += ["-incoming", "defer"]
        p = subprocess.Popen(cmd)
        procs.append(p)
        return p, qmp(os.path.join(work, name + ".qmp"))

    def last(name):
        with open(os.path.join(work, name + ".out")) as f:
            lines = [l.strip() for l in f if l.startswith("count")]
        return lines[-1] if lines else "(nothing yet)"

    try:
        started = time.time()
        original, cmd = qemu("original", ram, "on", False)
        while last("original") == "(nothing yet)":
            time.sleep(0.2)
        print("cold boot to the first count (64 MiB of random bytes drawn first): %.0f ms" % ((time.time() - started) * 1000))
        time.sleep(3)
        state = os.path.join(work, "state")
        copy = os.path.join(work, "ram.snap")
        t0 = time.time()
        cmd("stop")
        cmd("migrate-set-capabilities", capabilities=[{"capability": "x-ignore-shared", "state": True}])
        cmd("migrate", uri="exec:cat > " + state)
        while cmd("query-migrate").get("status") not in ("completed", "failed"):
            time.sleep(0.005)
        t1 = time.time()
        subprocess.run(["cp", "--sparse=always", ram, copy], check=True)
        t2 = time.time()
        cmd("cont")
        print("snapshot: device state %.0f ms (%d bytes), RAM copy %.0f ms (%d MiB on disk of 256), original paused %.0f ms; at %s"
              % ((t1 - t0) * 1000, os.path.getsize(state), (t2 - t1) * 1000, os.stat(copy).st_blocks * 512 >> 20,
                 (time.time() - t0) * 1000, last("original")))
        forks = []
        for n in (1, 2):
            t = time.time()
            p, fcmd = qemu("fork%d" % n, copy, "off", True)
            fcmd("migrate-set-capabilities", capabilities=[{"capability": "x-ignore-shared", "state": True}])
            fcmd("migrate-incoming", uri="exec:cat " + state)
            while fcmd("query-migrate").get("status") != "completed":
                time.sleep(0.005)
            fcmd("cont")
            print("fork %d: running %.0f ms after its QEMU started" % (n, (time.time() - t) * 1000))
            forks.append(p)
        time.sleep(4)
        for name, p in [("original", original), ("fork1", forks[0]), ("fork2", forks[1])]:
            print("%-8s %-30s %s" % (name, last(name), memory(p.pid)))
    finally:
        for p in procs:
            p.kill()
            p.wait()
        if os.path.exists(ram):
            os.remove(ram)
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
