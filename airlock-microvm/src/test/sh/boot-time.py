#!/usr/bin/env python3
"""
Boots one microVM guest the way the driver does, unjailed, and reports the time from QEMU's start to
the agent's HELLO on the virtio-serial port, and QEMU's CPU time by then (steadier on a loaded host).
Without --quiet it prints the console with host timestamps (add --append 'printk.time=1
initcall_debug ignore_loglevel' to see where the boot goes).

    # the driver's initramfs and kernel (from the repository, after mvn -pl airlock-microvm -am test-compile;
    # cp.txt: mvn -o -pl airlock-microvm dependency:build-classpath -Dmdep.outputFile=cp.txt)
    java -cp airlock-microvm/target/test-classes:airlock-microvm/target/classes:airlock-core/target/classes:\
airlock-agent/target/classes:$(cat airlock-microvm/cp.txt) dev.airlock.microvm.MakeInitramfs /tmp/initramfs.cpio.gz
    python3 airlock-microvm/src/test/sh/boot-time.py --kernel <vmlinux printed above> --initrd /tmp/initramfs.cpio.gz \
        --machine microvm --mmio --append "quiet pci=off cryptomgr.notests tsc_early_khz=<cpu MHz x 1000> tsc=reliable"

Interleaved A/B runs of several command lines: boot-time-ab.py ROUNDS 'name=<boot-time.py args>' ...
"""
import os, socket, subprocess, sys, time, tempfile, argparse, select
p = argparse.ArgumentParser()
p.add_argument('--machine', default='pc')
p.add_argument('--append', default='')
p.add_argument('--initrd', required=True)
p.add_argument('--kernel', required=True)
p.add_argument('--cpu', default='max')
p.add_argument('--accel', default='tcg,tb-size=64')
p.add_argument('--mmio', action='store_true')
p.add_argument('--quiet', action='store_true')
p.add_argument('--smp', default='1')
p.add_argument('--mem', default='640M')
p.add_argument('--timeout', type=float, default=60)
p.add_argument('extra', nargs='*')
a = p.parse_args()
d = tempfile.mkdtemp(prefix='mvb')
con, agent = d + '/tty.sock', d + '/agent.sock'
base = 'console=ttyS0 panic=-1 no_timer_check airlock.disk=134217728 airlock.nofile=1024 airlock.fsize=67108864 airlock.pids=256'
suffix = 'device' if a.mmio else 'pci'
cmd = ['qemu-system-x86_64', '-nodefaults', '-no-user-config', '-nographic', '-no-reboot', '-M', a.machine, '-cpu', a.cpu,
       '-accel', a.accel, '-m', a.mem, '-smp', a.smp, '-nic', 'none', '-kernel', a.kernel, '-initrd', a.initrd,
       '-append', base + ' ' + a.append,
       '-chardev', 'socket,id=console,server=on,wait=on,path=' + con, '-serial', 'chardev:console',
       '-fsdev', 'local,id=usr,path=/usr,readonly=on,security_model=none',
       '-device', 'virtio-9p-' + suffix + ',fsdev=usr,mount_tag=usr', '-device', 'virtio-serial-' + suffix,
       '-chardev', 'socket,id=agent,server=on,wait=off,path=' + agent,
       '-device', 'virtserialport,chardev=agent,name=airlock'] + a.extra
t0 = time.monotonic()
q = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=open(d + '/qemu.log', 'w'), stderr=subprocess.STDOUT)
def conn(path):
    while True:
        if q.poll() is not None:
            print('QEMU exited', q.returncode, open(d + '/qemu.log').read()); sys.exit(1)
        try:
            s = socket.socket(socket.AF_UNIX); s.connect(path); return s
        except OSError:
            time.sleep(0.01)
c = conn(con)
ag = conn(agent)
buf = b''
hello = None
while time.monotonic() - t0 < a.timeout:
    r, _, _ = select.select([c, ag], [], [], 0.5)
    if c in r:
        data = c.recv(65536)
        if not data: break
        buf += data
        while b'\n' in buf:
            line, buf = buf.split(b'\n', 1)
            if not a.quiet: print('%7.3f %s' % (time.monotonic() - t0, line.decode('latin1').rstrip()))
    if ag in r:
        data = ag.recv(100)
        hello = time.monotonic() - t0
        f = open('/proc/%d/stat' % q.pid).read().rsplit(')', 1)[1].split()
        cpu = (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')
        print('HELLO %.3f s cpu %.2f s (%r)' % (hello, cpu, data[:12]))
        break
if hello is None:
    print('NO HELLO within', a.timeout, 'console tail:', buf[-500:])
q.kill(); q.wait()
import shutil; shutil.rmtree(d)
