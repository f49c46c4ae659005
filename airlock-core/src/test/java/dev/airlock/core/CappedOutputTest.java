package dev.airlock.core;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/** An execution's output is kept up to its limit per stream; the rest is dropped, remembered, and never passed on. */
class CappedOutputTest {

    /** What a listener downstream of the cap was given. */
    private static final class Seen implements OutputListener {
        final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
        final ByteArrayOutputStream stderr = new ByteArrayOutputStream();

        @Override
        public void stdout(byte[] chunk) {
            assertThat(chunk).isNotEmpty();
            stdout.writeBytes(chunk);
        }

        @Override
        public void stderr(byte[] chunk) {
            assertThat(chunk).isNotEmpty();
            stderr.writeBytes(chunk);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void outputUnderTheLimitIsKeptWholeAndNotTruncated() {
        Seen seen = new Seen();
        CappedOutput out = new CappedOutput(10, seen);
        out.stdout(bytes("hello"));
        out.stdout(bytes("world"));
        assertThat(out.stdout()).isEqualTo(bytes("helloworld"));
        assertThat(out.truncated()).isFalse();
        assertThat(seen.stdout.toByteArray()).isEqualTo(bytes("helloworld"));
    }

    @Test
    void outputPastTheLimitIsDroppedAndRemembered() {
        Seen seen = new Seen();
        CappedOutput out = new CappedOutput(8, seen);
        out.stdout(bytes("12345"));
        out.stdout(bytes("67890"));
        out.stdout(bytes("more"));
        assertThat(out.stdout()).isEqualTo(bytes("12345678"));
        assertThat(seen.stdout.toByteArray()).as("the listener sees only what is kept").isEqualTo(bytes("12345678"));
        assertThat(out.truncated()).isTrue();
    }

    @Test
    void eachStreamHasItsOwnLimit() {
        Seen seen = new Seen();
        CappedOutput out = new CappedOutput(4, seen);
        out.stdout(bytes("aaaaaa"));
        out.stderr(bytes("bbb"));
        out.stderr(bytes("b"));
        assertThat(out.stdout()).isEqualTo(bytes("aaaa"));
        assertThat(out.stderr()).isEqualTo(bytes("bbbb"));
        assertThat(seen.stderr.toByteArray()).isEqualTo(bytes("bbbb"));
    }

    @Test
    void aZeroLimitKeepsNothingAndPassesNothingOn() {
        Seen seen = new Seen();
        CappedOutput out = new CappedOutput(0, seen);
        out.stdout(bytes("x"));
        out.stderr(bytes("y"));
        assertThat(out.stdout()).isEmpty();
        assertThat(out.stderr()).isEmpty();
        assertThat(seen.stdout.size() + seen.stderr.size()).isZero();
        assertThat(out.truncated()).isTrue();
    }

    @Test
    void withoutRetainTheBytesGoOnlyDownstreamButStillCountAgainstTheLimit() {
        Seen seen = new Seen();
        CappedOutput out = new CappedOutput(6, seen, false);
        out.stdout(bytes("abcd"));
        out.stdout(bytes("efgh"));
        assertThat(out.stdout()).isEmpty();
        assertThat(seen.stdout.toByteArray()).isEqualTo(bytes("abcdef"));
        assertThat(out.truncated()).isTrue();
    }

    @Test
    void aFloodOfChunksStaysAtTheLimit() {
        Seen seen = new Seen();
        CappedOutput out = new CappedOutput(1 << 20, seen);
        byte[] chunk = new byte[64 * 1024];
        for (int i = 0; i < 1000; i++) {
            out.stdout(chunk);
        }
        assertThat(out.stdout()).hasSize(1 << 20);
        assertThat(seen.stdout.size()).isEqualTo(1 << 20);
        assertThat(out.truncated()).isTrue();
    }
}
