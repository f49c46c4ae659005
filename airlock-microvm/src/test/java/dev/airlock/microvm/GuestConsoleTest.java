package dev.airlock.microvm;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** A guest that prints without end costs the host at most 64 KiB, and OOM kills are counted however the lines arrive. */
class GuestConsoleTest {

    @Test
    void keepsOnlyTheLastBytesAndCountsEveryOomKill() throws Exception {
        Pipe pipe = Pipe.open();
        try (GuestConsole console = new GuestConsole(pipe.source(), "test")) {
            String oom = "[ 12.3] " + GuestConsole.OOM_KILL_LINE + " 123 (python3) total-vm:1kB\n";
            // the OOM line split across two writes, as a serial port delivers it
            write(pipe, oom.substring(0, 20));
            write(pipe, oom.substring(20));
            byte[] filler = ("x".repeat(99) + "\n").getBytes(StandardCharsets.US_ASCII);
            for (int i = 0; i < 10_000; i++) { // about 1 MB
                pipe.sink().write(ByteBuffer.wrap(filler));
            }
            write(pipe, oom);
            write(pipe, "last line\n");
            long total = 2L * oom.length() + 10_000L * filler.length + "last line\n".length();
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (console.written() < total && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(console.written()).isEqualTo(total);

            assertThat(console.oomKills()).isEqualTo(2);
            assertThat(console.tail(1)).isEqualTo("last line");
            assertThat(console.tail(100_000).length()).isLessThanOrEqualTo(2000);
            assertThat(GuestConsole.KEEP_BYTES).isEqualTo(64 * 1024);
        } finally {
            pipe.sink().close();
        }
    }

    private static void write(Pipe pipe, String text) throws Exception {
        pipe.sink().write(ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII)));
    }
}
