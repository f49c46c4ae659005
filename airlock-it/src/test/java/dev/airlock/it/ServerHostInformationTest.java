package dev.airlock.it;

import dev.airlock.client.ExecResult;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.core.KernelFiles;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Through a real server, as a client sees it: a sandbox's mount table names neither the server's
 * data directory nor the driver's state directory, and /proc gives away neither the host's boot id
 * nor its kernel command line.
 */
class ServerHostInformationTest {

    private static LiveServer live;

    @BeforeAll
    static void start() {
        live = LiveServer.start(c -> c.withPoolSize(0));
    }

    @AfterAll
    static void stop() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void aSandboxOfTheServerSeesNoHostPathAndNoHostIdentity() throws IOException {
        String bootId = KernelFiles.read(Path.of("/proc/sys/kernel/random/boot_id"));
        try (RemoteSandbox s = live.client.create()) {
            ExecResult r = s.exec("sh", "-c", "cat /proc/self/mountinfo /proc/self/mounts /proc/1/mountinfo 2>/dev/null;"
                    + " cat /proc/sys/kernel/random/boot_id /proc/cmdline; echo end");

            assertThat(r.stdout()).endsWith("end\n").contains(" /run/airlock ")
                    .doesNotContain(live.dataDir.toString())
                    .doesNotContain(LiveServer.DRIVER.stateRoot() + "/")
                    .doesNotContain("/engines/")
                    .doesNotContain(bootId);
        }
    }
}
