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
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The Debian package as a host installs it (docs/install.md): built in two clones of one commit,
 * the same bytes; lintian finds no error; installed into a Debian 12 root made with mmdebstrap (with /proc,
 * /sys and /dev bound), the installed copy proves the host (`airlock doctor`) and runs a sandbox;
 * installed again as an upgrade, the token and the audit chain are as they were; purged, nothing of
 * it is left. And the unit as systemd runs it: in a Debian root booted with systemd as its PID 1,
 * the package's service serves, is confined as the unit says, comes back after a crash and reaps
 * what the dead server left, and stops cleanly. Slow (Debian roots fetched and made): the full lane.
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
     * namespaces Airlock's sandboxes are made in. With no AOT cache for the CLI: its training would run
     * on in the background, in a root the test removes (PackageTest trains and uses one).
     */
    private static PackageTest.Result inRoot(Duration timeout, String... command) throws Exception {
        List<String> all = new ArrayList<>(List.of("unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount --rbind \"$0\" \"$0\" && cd \"$0\" && mkdir -p .host && pivot_root . .host && /.host/bin/umount -l /.host && rmdir /.host"
                        + " && exec \"$@\"", root.toString()));
        all.addAll(List.of(command));
        return PackageTest.run(all, Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "HOME", "/root", "AIRLOCK_AOT", "0"), PackageTest.HOME,
                timeout);
    }

    /** A Debian 12 root made by mmdebstrap with apt and the packages {@code include} names (comma-separated). */
    private static Path debianRoot(String include) throws Exception {
        Path made = Files.createTempDirectory("airlock-debian-root");
        PackageTest.Result r = PackageTest.run(List.of("mmdebstrap", "--variant=apt", "--include=" + include, "bookworm", made.toString()),
                Map.of(), PackageTest.HOME, Duration.ofMinutes(20));
        assertThat(r.code()).as(r.output()).isZero();
        return made;
    }

    private static void mount(String... args) throws Exception {
        PackageTest.Result r = PackageTest.run(List.of(args), Map.of(), PackageTest.HOME, Duration.ofMinutes(1));
        assertThat(r.code()).as(r.output()).isZero();
        MOUNTS.add(args[args.length - 1]);
    }

    @Test
    @Order(3)
    void itInstallsRunsASandboxUpgradesKeepingItsDataAndPurgesToNothing() throws Exception {
        // Debian 12 with apt and python3 (what the built-in image runs Python with); nothing of Airlock's dependencies
        root = debianRoot("python3");
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

    /** Runs {@code command} in every namespace of the booted systemd whose host PID is {@code init}, as root there. */
    private static PackageTest.Result inBooted(long init, Duration timeout, String command) throws Exception {
        return PackageTest.run(List.of("nsenter", "--target", Long.toString(init), "--all", "sh", "-c", command),
                Map.of("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", "HOME", "/root"), PackageTest.HOME, timeout);
    }

    /** What {@code command} prints in the booted root, asserting it succeeds. */
    private static String inBootedOk(long init, String command) throws Exception {
        PackageTest.Result r = inBooted(init, Duration.ofMinutes(2), command);
        assertThat(r.code()).as(command + ": " + r.output()).isZero();
        return r.output().strip();
    }

    /** Waits until {@code command} prints something that contains {@code expected}; the last output when it never does. */
    private static String awaitOutput(long init, String command, String expected) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        String last;
        do {
            last = inBooted(init, Duration.ofMinutes(1), command).output();
            if (last.contains(expected)) {
                return last;
            }
            Thread.sleep(250);
        } while (System.nanoTime() < deadline);
        throw new AssertionError(command + " never printed " + expected + ": " + last);
    }

    /** The host directory of each cgroup hierarchy this process is in, joined with {@code child}. */
    private static List<Path> cgroupsOfThisProcess(String child) throws Exception {
        List<Path> dirs = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of("/proc/self/cgroup"))) {
            String[] parts = line.split(":", 3);
            String hierarchy = parts[1].isEmpty() ? "unified" : parts[1].equals("name=systemd") ? "systemd" : parts[1];
            dirs.add(Path.of("/sys/fs/cgroup/" + hierarchy + parts[2]).resolve(child));
        }
        return dirs;
    }

    @Test
    @Order(4)
    void underSystemdTheUnitServesConfinedComesBackAfterACrashAndStopsCleanly() throws Exception {
        assumeTrue(!Files.exists(Path.of("/sys/fs/cgroup/cgroup.controllers")),
                "systemd is booted over the host's cgroup v1 hierarchies (a hybrid or v1 host); a cgroup-v2-only host would need controllers delegated to it");
        Path booted = debianRoot("python3,systemd,systemd-sysv,runc,mount,curl");
        String cgroups = "airlock-package-test-" + ProcessHandle.current().pid();
        Files.copy(built.deb(), booted.resolve("root/airlock.deb"));
        Path script = Files.createTempFile("boot-systemd", ".sh");
        try (var in = PackageInstallTest.class.getResourceAsStream("boot-systemd.sh")) {
            Files.copy(in, script, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        Path log = Files.createTempFile("boot-systemd", ".log");
        Process boot = new ProcessBuilder("sh", script.toString(), booted.toString(), cgroups).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        ProcessHandle systemd = null;
        try {
            // the unshare's child, PID 1 of the namespaces: systemd
            long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
            while (systemd == null && System.nanoTime() < deadline && boot.isAlive()) {
                systemd = boot.children().filter(p -> p.info().command().orElse("").endsWith("/systemd")).findFirst().orElse(null);
                Thread.sleep(100);
            }
            assertThat(systemd).as(Files.readString(log)).isNotNull();
            long init = systemd.pid();
            awaitOutput(init, "test -S /run/systemd/private && echo listening", "listening"); // systemctl's socket
            PackageTest.Result up = inBooted(init, Duration.ofMinutes(2), "systemctl is-system-running --wait");
            assertThat(up.output()).as("the booted system: " + inBooted(init, Duration.ofMinutes(1), "systemctl --failed --no-pager").output())
                    .containsAnyOf("running", "degraded");

            // installed, the service starts, makes its token and serves
            inBootedOk(init, "dpkg -i /root/airlock.deb");
            assertThat(inBootedOk(init, "systemctl is-enabled airlock")).isEqualTo("enabled");
            awaitOutput(init, "journalctl -u airlock -o cat --no-pager", "serving on http://127.0.0.1:7700");

            // confined as the unit says, and sandboxes run all the same
            String mainPid = inBootedOk(init, "systemctl show -p MainPID --value airlock");
            String status = inBootedOk(init, "cat /proc/" + mainPid + "/status");
            assertThat(status).contains("NoNewPrivs:\t1").contains("Seccomp:\t2");
            long bounding = Long.parseLong(status.lines().filter(l -> l.startsWith("CapBnd:")).findFirst().orElseThrow().substring(7).strip(), 16);
            assertThat(bounding & (1L << 16)).as("CAP_SYS_MODULE in the bounding set").isZero();
            assertThat(bounding & (1L << 25)).as("CAP_SYS_TIME in the bounding set").isZero();
            String api = "T=$(cat /var/lib/airlock/token); curl -s -H \"Authorization: Bearer $T\" ";
            String created = inBootedOk(init, api + "-X POST localhost:7700/v1/sandboxes -d '{}'");
            java.util.regex.Matcher id = java.util.regex.Pattern.compile("\"id\":\"(al-[a-z0-9-]+)\"").matcher(created);
            assertThat(id.find()).as(created).isTrue();
            String sandbox = id.group(1);
            assertThat(inBootedOk(init, api + "-X POST localhost:7700/v1/sandboxes/" + sandbox
                    + "/exec -d '{\"command\":[\"python3\",\"-c\",\"print(6*7)\"]}'")).contains("\"stdout\":\"42\\n\"");

            // killed, it comes back, and the new server reaps the sandbox the dead one left (its cgroups are outside the unit's)
            inBootedOk(init, "kill -9 " + mainPid);
            awaitOutput(init, "systemctl show -p NRestarts -p ActiveState airlock", "NRestarts=1");
            awaitOutput(init, "journalctl -u airlock -o cat --no-pager", "reaped sandbox " + sandbox);
            awaitOutput(init, "systemctl show -p ActiveState airlock", "ActiveState=active");
            assertThat(inBootedOk(init, api + "-o /dev/null -w '%{http_code}' localhost:7700/v1/sandboxes/" + sandbox)).isEqualTo("404");
            assertThat(inBootedOk(init, "ls /sys/fs/cgroup/memory/airlock")).doesNotContain(sandbox);

            // stopped, it destroys its sandboxes and ends as a clean stop, leaving no state, cgroup or process of them
            inBootedOk(init, api + "-X POST localhost:7700/v1/sandboxes -d '{}'");
            inBootedOk(init, "systemctl stop airlock");
            assertThat(inBootedOk(init, "systemctl show -p Result --value airlock")).isEqualTo("success");
            for (String hierarchy : List.of("memory", "pids", "unified")) {
                assertThat(inBootedOk(init, "ls /sys/fs/cgroup/" + hierarchy + "/airlock 2>/dev/null || true")).doesNotContain("al-");
            }
            assertThat(inBootedOk(init, "test -e /run/airlock && echo left || echo gone")).isEqualTo("gone");
            assertThat(inBootedOk(init, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")).doesNotContain("airlock-agent")
                    .doesNotContain("runc");
            System.out.printf("under systemd: the unit served, was confined (NoNewPrivs, seccomp, bounding set), came back after SIGKILL and stopped"
                    + " cleanly%n");
        } finally {
            // SIGKILL to PID 1 of the namespaces ends every process in them; their mounts go with the mount namespace
            if (systemd != null) {
                systemd.destroyForcibly();
                systemd.onExit().get(1, java.util.concurrent.TimeUnit.MINUTES);
            }
            boot.destroyForcibly().waitFor();
            for (Path dir : cgroupsOfThisProcess(cgroups)) {
                removeCgroupTree(dir);
            }
            PackageTest.run(List.of("rm", "-rf", "--one-file-system", booted.toString()), Map.of(), PackageTest.HOME, Duration.ofMinutes(5));
            Files.deleteIfExists(script);
            Files.deleteIfExists(log);
        }
    }

    /** Removes a cgroup directory and every one below it, deepest first, once the processes in them are gone. */
    private static void removeCgroupTree(Path dir) throws Exception {
        if (!Files.isDirectory(dir)) {
            return;
        }
        for (int attempt = 0; ; attempt++) {
            List<Path> dirs;
            try (var walk = Files.walk(dir)) {
                dirs = walk.filter(Files::isDirectory).sorted(java.util.Comparator.reverseOrder()).toList();
            }
            try {
                for (Path d : dirs) {
                    Files.delete(d);
                }
                return;
            } catch (java.io.IOException e) {
                if (attempt == 100) {
                    throw new AssertionError("cannot remove the booted system's cgroup " + dir, e);
                }
                Thread.sleep(100);
            }
        }
    }
}
