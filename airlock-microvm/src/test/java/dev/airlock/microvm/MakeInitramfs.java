package dev.airlock.microvm;

import java.nio.file.Path;

/**
 * Writes a driver's initramfs to a file, for measuring boots outside the driver
 * ({@code src/test/sh/boot-time.py}): {@code MakeInitramfs <output> [<kernel cache dir>]}.
 */
public final class MakeInitramfs {

    private MakeInitramfs() {
    }

    public static void main(String[] args) {
        GuestKernel kernel = GuestKernel.prepare(Path.of(args.length > 1 ? args[1] : "/var/cache/airlock/microvm"));
        GuestImage.write(kernel, Path.of("/"), Path.of(args[0]));
        System.out.println(kernel.vmlinux());
    }
}
