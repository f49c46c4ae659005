package dev.airlock.it;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Debian package as a host installs it (docs/install.md): built in two clones of one commit,
 * the same bytes; lintian finds no error; installed into a Debian 12 root made with mmdebstrap (with /proc,
 * /sys and /dev bound), the installed copy proves the host (`airlock doctor`) and runs a sandbox;
 * installed again as an upgrade, the token and the audit chain are as they were; purged, nothing of
 * it is left. Slow (a Debian root fetched and made): the full lane.
 */
@Tag("full")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PackageInstallTest {

    private static PackageTest.Built built;
    private static Path root;
    private static final List<String> MOUNTS = new ArrayList<>();

    @BeforeAll
    static void buildThem() throws Exception {
        built = PackageTest.build();
    }

    @AfterAll
    static void removeTheRoot() throws Exception {
        for (String mount : MOUNTS.reversed()) {
            PackageTest.run(List.of("umount", "-R", "-l", mount), Map.of(), PackageTest.HOME, Duration.ofMinutes(1));
        }
        if (root != null) {
            PackageTest.run(List.of("rm", "-rf", "--one-file-system", root.toString()), Map.of(), PackageTest.HOME, Duration.ofMinutes(5));
        }
    }

    private static String sha256(Path file) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
    }

    /** Builds the package and the tarball in a clone of this checkout's commit at {@code dir}: its own Maven build, from nothing. */
    private static PackageTest.Built buildInAClone(Path dir) throws Exception {
        PackageTest.Result cloned = PackageTest.run(List.of("git", "clone", "-q", PackageTest.HOME.toString(), dir.toString()), Map.of(),
                PackageTest.HOME, Duration.ofMinutes(5));
        assertThat(cloned.code()).as(cloned.output()).isZero();
        PackageTest.Result r = PackageTest.run(List.of(dir.resolve("bin/airlock").toString(), "package"), Map.of(), dir, Duration.ofMinutes(20));
        assertThat(r.code()).as(r.output()).isZero();
        return PackageTest.built(r.output());
    }

    @Test
    @Order(1)
    void theSameCommitGivesTheSameBytes(@TempDir Path first, @TempDir Path second) throws Exception {
        // two clones at two paths, each built from nothing: what one makes, the other makes byte for byte
        PackageTest.Built a = buildInAClone(first.resolve("airlock"));
        PackageTest.Built b = buildInAClone(second.resolve("checkout"));
        assertThat(a.deb().getFileName()).isEqualTo(b.deb().getFileName());
        assertThat(sha256(b.deb())).as("the package, built in two clones").isEqualTo(sha256(a.deb()));
        assertThat(sha256(b.tarball())).as("the tarball, built in two clones").isEqualTo(sha256(a.tarball()));
    }

    @Test
    @Order(2)
    void lintianFindsNoError() throws Exception {
        PackageTest.Result r = PackageTest.run(List.of("lintian", "--no-tag-display-limit", built.deb().toString()), Map.of(),
                PackageTest.HOME, Duration.ofMinutes(10));
        List<String> errors = r.output().lines().filter(l -> l.startsWith("E: ")).toList();
        assertThat(errors).as(r.output()).isEmpty();
    }

    /**
     * Runs {@code command} inside the Debian root: in a mount namespace of its own whose root the
     * Debian root is (pivot_root), not a chroot, in which the kernel refuses to create the user
     * namespaces Airlock's sandboxes are made in.
     */
    private static PackageTest.Result inRoot(Duration timeout, String... command) throws Exception {
        List<String> all = new ArrayList<>(List.of("unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount --rbind \"$0\" \"$0\" && cd \"$0\" && mkdir -p .host && pivot_root . .host && /.host/bin/umount -l /.host && rmdir /.host"
                        + " && exec \"$@\"", root.toString()));
        all.addAll(List.of(command));
        return PackageTest.run(all, Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "HOME", "/root"), PackageTest.HOME, timeout);
    }

    private static void mount(String... args) throws Exception {
        PackageTest.Result r = PackageTest.run(List.of(args), Map.of(), PackageTest.HOME, Duration.ofMinutes(1));
        assertThat(r.code()).as(r.output()).isZero();
        MOUNTS.add(args[args.length - 1]);
    }

    @Test
    @Order(3)
    void itInstallsRunsASandboxUpgradesKeepingItsDataAndPurgesToNothing() throws Exception {
        root = Files.createTempDirectory("airlock-debian-root");
        // Debian 12 with apt and python3 (what the built-in image runs Python with); nothing of Airlock's dependencies
        PackageTest.Result made = PackageTest.run(List.of("mmdebstrap", "--variant=apt", "--include=python3", "bookworm", root.toString()),
                Map.of(), PackageTest.HOME, Duration.ofMinutes(20));
        assertThat(made.code()).as(made.output()).isZero();
        mount("mount", "-t", "proc", "proc", root.resolve("proc").toString());
        mount("mount", "--rbind", "/sys", root.resolve("sys").toString());
        mount("mount", "--rbind", "/dev", root.resolve("dev").toString());
        mount("mount", "-t", "tmpfs", "tmpfs", root.resolve("run").toString());
        Files.copy(built.deb(), root.resolve("tmp/airlock.deb"));
        Files.copy(Path.of("/etc/resolv.conf"), root.resolve("etc/resolv.conf"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);

        // apt installs it with what it declares it depends on, and nothing else
        long installing = System.nanoTime();
        PackageTest.Result updated = inRoot(Duration.ofMinutes(10), "apt-get", "update", "-qq");
        assertThat(updated.code()).as(updated.output()).isZero();
        PackageTest.Result installed = inRoot(Duration.ofMinutes(10), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y",
                "-qq", "--no-install-recommends", "/tmp/airlock.deb");
        assertThat(installed.code()).as(installed.output()).isZero();
        PackageTest.Result ran = inRoot(Duration.ofMinutes(5), "airlock", "run", "--lang", "python", "--code", "print(6*7)");
        long toFirstAnswer = System.nanoTime() - installing;
        assertThat(ran.code()).as(ran.output()).isZero();
        assertThat(ran.output()).contains("42");
        System.out.printf("package: %d bytes; from apt-get update and install (runc and mount fetched) to the first answer of airlock run:"
                + " %d ms%n", Files.size(built.deb()), toFirstAnswer / 1_000_000);
        PackageTest.Result doctor = inRoot(Duration.ofMinutes(5), "airlock", "doctor");
        assertThat(doctor.code()).as(doctor.output()).isZero();

        // the server's first start makes the token and starts the audit log; then it stops as the unit stops it
        PackageTest.Result served = inRoot(Duration.ofMinutes(2), "timeout", "-s", "TERM", "20", "airlock", "serve", "--port", "0");
        Path data = root.resolve("var/lib/airlock");
        assertThat(data.resolve("token")).as(served.output()).exists();
        String token = Files.readString(data.resolve("token"));
        PackageTest.Result verified = inRoot(Duration.ofMinutes(2), "airlock", "audit", "verify", "--data-dir", "/var/lib/airlock");
        assertThat(verified.code()).as(verified.output()).isZero();
        assertThat(verified.output()).contains("intact");

        // the same package installed again: an upgrade, which keeps the data
        long upgrading = System.nanoTime();
        PackageTest.Result upgraded = inRoot(Duration.ofMinutes(5), "dpkg", "-i", "/tmp/airlock.deb");
        assertThat(upgraded.code()).as(upgraded.output()).isZero();
        PackageTest.Result again = inRoot(Duration.ofMinutes(5), "airlock", "run", "--lang", "python", "--code", "print(6*7)");
        assertThat(again.output()).contains("42");
        System.out.printf("from dpkg -i (an upgrade) to the first answer of airlock run: %d ms%n", (System.nanoTime() - upgrading) / 1_000_000);
        assertThat(Files.readString(data.resolve("token"))).isEqualTo(token);
        PackageTest.Result still = inRoot(Duration.ofMinutes(2), "airlock", "audit", "verify", "--data-dir", "/var/lib/airlock");
        assertThat(still.code()).as(still.output()).isZero();
        assertThat(still.output()).contains("intact");

        // a remove keeps the data; a purge leaves nothing
        assertThat(inRoot(Duration.ofMinutes(5), "dpkg", "--remove", "airlock").code()).isZero();
        assertThat(data.resolve("token")).exists();
        PackageTest.Result purged = inRoot(Duration.ofMinutes(5), "dpkg", "--purge", "airlock");
        assertThat(purged.code()).as(purged.output()).isZero();
        for (String path : List.of("usr/lib/airlock", "usr/bin/airlock", "var/lib/airlock", "etc/airlock", "lib/systemd/system/airlock.service",
                "usr/share/doc/airlock")) {
            assertThat(root.resolve(path)).as("left after the purge").doesNotExist();
        }
    }
}
