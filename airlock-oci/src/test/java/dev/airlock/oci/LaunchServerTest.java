package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.HostFiles;
import dev.airlock.oci.image.TestArchives;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * One {@code airlock-launch serve} for a process's starts ({@link LaunchServer}): starts at once each
 * get their own PID 1; a failing start answers with its reason and leaves the server serving; a
 * server killed from outside fails nothing that comes after it; a closed one leaves no thread of
 * this process reading it (which would hold up a CLI's exit); a start past the most at once is
 * refused, and one past its time killed, each saying so.
 */
class LaunchServerTest {

    private Path work;
    private Path root;
    private UidSlots slots;
    private final List<Long> hostIds = new ArrayList<>();
    private LaunchServer server;

    @BeforeEach
    void setUp() throws Exception {
        work = Files.createTempDirectory(Path.of("/var/tmp"), "airlock-launch-server-test");
        Files.setAttribute(work, "unix:mode", 0755);
        root = Files.createDirectories(work.resolve("root"));
        Files.createDirectories(root.resolve("bin"));
        Files.write(root.resolve("bin/busybox"), TestArchives.staticBusybox());
        Files.setAttribute(root.resolve("bin/busybox"), "unix:mode", 0755);
        OciDriverConfig config = OciDriverConfig.defaults();
        slots = new UidSlots(config.stateRoot(), config.hostIdBase());
        server = new LaunchServer(Launcher.install().binary());
    }

    @AfterEach
    void tearDown() {
        server.close();
        hostIds.forEach(slots::release);
        HostFiles.deleteTree(work);
    }

    /** A spec whose PID 1 runs {@code script} under busybox sh, as the sandbox user, in a user namespace of its own id range. */
    private Path spec(String name, String script) throws Exception {
        long hostIdBase = slots.allocate("al-launchserver-" + ProcessHandle.current().pid() + "-" + name);
        hostIds.add(hostIdBase);
        Path spec = work.resolve(name + ".spec");
        Files.writeString(spec, String.join("\n", "log\t" + work.resolve(name + ".out"), "idmap\t" + hostIdBase + "\t65536", "network\tnew",
                "rootfs\t" + root, "hostname\tsandbox", "user\t1000\t1000", "cwd\t/", "arg\t/bin/busybox", "arg\tsh", "arg\t-c",
                "arg\t" + script) + "\n");
        return spec;
    }

    private static void awaitExit(long pid) {
        ProcessHandle.of(pid).ifPresent(p -> p.onExit().orTimeout(30, TimeUnit.SECONDS).join());
    }

    @Test
    void startsAtOnceEachGetTheirOwnFirstProcess() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<Long>> started = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                Path spec = spec("s" + i, "echo I am $$ in " + i);
                Path log = work.resolve("s" + i + ".log");
                String id = "al-test-" + i;
                started.add(pool.submit((Callable<Long>) () -> server.start(id, spec, log)));
            }
            List<Long> pids = new ArrayList<>();
            for (Future<Long> f : started) {
                pids.add(f.get(90, TimeUnit.SECONDS));
            }
            assertThat(pids).doesNotHaveDuplicates().allSatisfy(pid -> assertThat(pid).isPositive());
            pids.forEach(LaunchServerTest::awaitExit);
            for (int i = 0; i < 8; i++) {
                // each ran its own script as PID 1 of its own pid namespace
                assertThat(Files.readString(work.resolve("s" + i + ".out"))).isEqualTo("I am 1 in " + i + "\n");
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aFailingStartSaysWhyAndTheServerServesOn() throws Exception {
        Path bad = work.resolve("bad.spec");
        Files.writeString(bad, "idmap\t0\t65536\nrootfs\t/\nuser\t1000\t1000\narg\t/bin/true\n");
        assertThatThrownBy(() -> server.start("al-test-bad", bad, work.resolve("bad.log")))
                .isInstanceOf(AirlockException.class)
                .hasMessageContaining("airlock-launch could not start sandbox al-test-bad: airlock-launch: the idmap 0 65536 is outside the host's ids");

        long pid = server.start("al-test-good", spec("good", "echo fine"), work.resolve("good.log"));
        awaitExit(pid);
        assertThat(Files.readString(work.resolve("good.out"))).isEqualTo("fine\n");
    }

    @Test
    void aServerKilledFromOutsideIsReplacedByTheNextStart() throws Exception {
        List<ProcessHandle> before = serverProcesses();
        awaitExit(server.start("al-test-first", spec("first", "true"), work.resolve("first.log")));
        ProcessHandle first = newServer(before);
        first.destroyForcibly();
        first.onExit().get(10, TimeUnit.SECONDS);

        long pid = server.start("al-test-after", spec("after", "echo after"), work.resolve("after.log"));
        awaitExit(pid);
        assertThat(Files.readString(work.resolve("after.out"))).isEqualTo("after\n");
        assertThat(newServer(before)).isNotEqualTo(first);
    }

    @Test
    void aClosedServerEndsAndLeavesNoThreadReadingIt() throws Exception {
        List<ProcessHandle> before = serverProcesses();
        long readersBefore = answerReaders();
        awaitExit(server.start("al-test-once", spec("once", "true"), work.resolve("once.log")));
        ProcessHandle serving = newServer(before);
        server.close();
        assertThat(serving.onExit().get(10, TimeUnit.SECONDS).isAlive()).isFalse();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (answerReaders() > readersBefore && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(answerReaders()).as("threads still reading a server's answers").isEqualTo(readersBefore);
    }

    @Test
    void aStartPastTheMostAtOnceIsRefusedAndOnePastItsTimeIsKilled() throws Exception {
        List<ProcessHandle> before = serverProcesses();
        LaunchServer bounded = new LaunchServer(Launcher.install().binary(), 2, 1);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            // a log on a FIFO that nobody reads: opening it blocks a start until its time is up
            Path fifo = work.resolve("nobody-reads.log");
            assertThat(new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor()).isZero();
            Path spec = spec("blocked", "true");
            List<Future<Long>> blocked = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                String id = "al-test-blocked-" + i;
                blocked.add(pool.submit((Callable<Long>) () -> bounded.start(id, spec, fifo)));
            }
            ProcessHandle serving = awaitServer(before);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (serving.children().count() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(serving.children().count()).as("starts in flight").isEqualTo(2);

            assertThatThrownBy(() -> bounded.start("al-test-third", spec("third", "true"), work.resolve("third.log")))
                    .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(AirlockException.Kind.LIMIT_EXCEEDED))
                    .hasMessageContaining("this host is starting 2 sandboxes at once already (airlock-launch's bound)");
            for (int i = 0; i < 2; i++) {
                Future<Long> start = blocked.get(i);
                assertThatThrownBy(() -> start.get(60, TimeUnit.SECONDS)).cause()
                        .isInstanceOfSatisfying(AirlockException.class, e -> assertThat(e.kind()).isEqualTo(AirlockException.Kind.UNAVAILABLE))
                        .hasMessageContaining("airlock-launch did not start sandbox al-test-blocked-" + i + " within 1 s and killed the start");
            }

            // the killed starts are gone, and the server serves on
            long pid = bounded.start("al-test-after", spec("after-bound", "echo served"), work.resolve("after-bound.log"));
            awaitExit(pid);
            assertThat(Files.readString(work.resolve("after-bound.out"))).isEqualTo("served\n");
            assertThat(serving.isAlive()).isTrue();
            assertThat(serving.children().toList()).as("starts still running").isEmpty();
        } finally {
            pool.shutdownNow();
            bounded.close();
        }
    }

    /**
     * A server that answers what no version of airlock-launch says is not trusted with another
     * start: the start fails saying what it answered, and the server is stopped. This one is a
     * script, so that the host's side is tested alone.
     */
    @Test
    void aServerThatAnswersNonsenseIsStopped() throws Exception {
        Path impostor = work.resolve("impostor");
        Path pid = work.resolve("impostor.pid");
        Files.writeString(impostor, "#!/bin/sh\necho $$ > " + pid + "\nread request\nprintf '%s\\tnonsense\\n' \"${request%%\t*}\"\n"
                + "exec sleep 600\n");
        Files.setAttribute(impostor, "unix:mode", 0755);
        LaunchServer lying = new LaunchServer(impostor, 2, 1);
        try {
            assertThatThrownBy(() -> lying.start("al-test-lied-to", work.resolve("unused.spec"), work.resolve("unused.log")))
                    .isInstanceOf(AirlockException.class)
                    .hasMessageContaining("airlock-launch serve answered 'nonsense' for sandbox al-test-lied-to, which is not an answer of"
                            + " this version: the server was stopped");
            ProcessHandle stopped = ProcessHandle.of(Long.parseLong(Files.readString(pid).strip())).orElse(null);
            if (stopped != null) {
                assertThat(stopped.onExit().get(10, TimeUnit.SECONDS).isAlive()).as("the server that said it").isFalse();
            }
        } finally {
            lying.close();
        }
    }

    /** The server started since {@code before} was listed, once it runs. */
    private static ProcessHandle awaitServer(List<ProcessHandle> before) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (serverProcesses().stream().allMatch(before::contains) && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        return newServer(before);
    }

    /** This JVM's {@code airlock-launch serve} processes. */
    private static List<ProcessHandle> serverProcesses() {
        return ProcessHandle.current().children()
                .filter(p -> p.info().arguments().map(a -> a.length > 0 && a[0].equals("serve")).orElse(false))
                .toList();
    }

    /** The one server started since {@code before} was listed (other tests of this JVM may keep theirs). */
    private static ProcessHandle newServer(List<ProcessHandle> before) {
        List<ProcessHandle> started = serverProcesses().stream().filter(p -> !before.contains(p)).toList();
        assertThat(started).as("servers started by this test").hasSize(1);
        return started.getFirst();
    }

    private static long answerReaders() {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals("airlock-launch-answers")).count();
    }
}
