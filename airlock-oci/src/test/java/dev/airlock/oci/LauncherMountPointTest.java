package dev.airlock.oci;

import dev.airlock.core.HostFiles;
import dev.airlock.oci.image.TestArchives;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * airlock-launch alone, on a root no import has tidied: its mount point {@code /escape} is an
 * absolute symbolic link to a path the host has too. The launcher resolves the destination inside
 * the new root ({@code openat2} with {@code RESOLVE_IN_ROOT}), so the tmpfs lands on the root's own
 * directory, where the sandbox's process finds and writes it. A launcher that followed the link
 * from the host's root would mount on the host's path instead (in the sandbox's mount namespace,
 * detached at the pivot), and the process would find the root's directory read-only.
 */
class LauncherMountPointTest {

    @Test
    void aSymlinkedMountPointIsResolvedInsideTheRoot() throws Exception {
        byte[] busybox = TestArchives.staticBusybox();
        Path work = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-launch-test");
        Path hostTarget = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-escape");
        OciDriverConfig config = OciDriverConfig.defaults();
        UidSlots slots = new UidSlots(config.stateRoot(), config.hostIdBase());
        long hostIdBase = slots.allocate("al-launchtest-" + ProcessHandle.current().pid());
        try {
            Files.setAttribute(work, "unix:mode", 0755);
            Path root = Files.createDirectories(work.resolve("root"));
            Files.createDirectories(root.resolve("bin"));
            Files.write(root.resolve("bin/busybox"), busybox);
            Files.setAttribute(root.resolve("bin/busybox"), "unix:mode", 0755);
            Path inRoot = Files.createDirectories(root.resolve(hostTarget.toString().substring(1)));
            Files.setAttribute(inRoot, "unix:mode", 0755);
            Files.createSymbolicLink(root.resolve("escape"), hostTarget);
            Path log = work.resolve("log");
            String spec = String.join("\n",
                    "log\t" + log, "idmap\t" + hostIdBase + "\t65536", "network\tnew", "rootfs\t" + root, "hostname\tsandbox",
                    "mount\ttmpfs\t/escape\ttmpfs\t6\tmode=1777,size=65536\t0",
                    "user\t1000\t1000", "cwd\t/", "arg\t/bin/busybox", "arg\tsh", "arg\t-c",
                    "arg\ttouch /escape/mine && echo landed-inside || echo refused") + "\n";
            Path specFile = work.resolve("launch.spec");
            Files.writeString(specFile, spec);
            OciRuntime.Result r = OciRuntime.run(List.of(Launcher.install().binary().toString(), "run", specFile.toString()), log, true);
            assertThat(r.exitCode()).as("airlock-launch: %s", OciRuntime.lastError(log)).isZero();
            long pid = Long.parseLong(r.output().strip());
            ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(30, java.util.concurrent.TimeUnit.SECONDS).join());
            assertThat(Files.readString(log)).as("what the sandbox's process said").contains("landed-inside").doesNotContain("refused");
            try (var left = Files.list(hostTarget)) {
                assertThat(left.toList()).as("the host's directory of that name").isEmpty();
            }
        } finally {
            slots.release(hostIdBase);
            HostFiles.deleteTree(work);
            HostFiles.deleteTree(hostTarget);
        }
    }

    /**
     * A spec without a user namespace's id map, or one that maps sandbox root to host root, starts
     * nothing: the launcher never runs a sandbox as host root.
     */
    @Test
    void aSpecWithoutAnIdMapOrMappingHostRootStartsNothing() throws IOException {
        Path work = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-launch-test");
        try {
            Path spec = work.resolve("launch.spec");
            Files.writeString(spec, "rootfs\t/\nuser\t1000\t1000\narg\t/bin/true\n");
            OciRuntime.Result r = OciRuntime.run(List.of(Launcher.install().binary().toString(), "run", spec.toString()), null, false);
            assertThat(r.exitCode()).isEqualTo(1);
            assertThat(r.output()).contains("airlock-launch: the spec has no line 'idmap HOST-ID COUNT'");
            Files.writeString(spec, "idmap\t0\t65536\nrootfs\t/\nuser\t1000\t1000\narg\t/bin/true\n");
            r = OciRuntime.run(List.of(Launcher.install().binary().toString(), "run", spec.toString()), null, false);
            assertThat(r.exitCode()).isEqualTo(1);
            assertThat(r.output()).contains("airlock-launch: the idmap 0 65536 is outside the host's ids");
        } finally {
            HostFiles.deleteTree(work);
        }
    }
}
