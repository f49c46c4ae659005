package dev.airlock.core;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static dev.airlock.core.Refusals.invalid;
import static org.assertj.core.api.Assertions.assertThat;

/** Sizes a user types and the ranges every budget must stay inside. */
class LimitsTest {

    @Test
    void sizesTakeBinaryUnitsInAnySpelling() {
        assertThat(Limits.parseSize("memory", "1048576")).isEqualTo(1L << 20);
        assertThat(Limits.parseSize("memory", "512k")).isEqualTo(512L << 10);
        assertThat(Limits.parseSize("memory", "256m")).isEqualTo(256L << 20);
        assertThat(Limits.parseSize("memory", "256M")).isEqualTo(256L << 20);
        assertThat(Limits.parseSize("memory", "256MB")).isEqualTo(256L << 20);
        assertThat(Limits.parseSize("memory", "256MiB")).isEqualTo(256L << 20);
        assertThat(Limits.parseSize("memory", " 1g ")).isEqualTo(1L << 30);
        assertThat(Limits.parseSize("memory", "1.5g")).isEqualTo(3L << 29);
        assertThat(Limits.parseSize("disk", "2t")).isEqualTo(2L << 40);
        assertThat(Limits.parseSize("output", "0")).isZero();
    }

    @Test
    void anEmptySizeIsRefusedNamingTheField() {
        invalid(() -> Limits.parseSize("memory", null), "memory is empty", "such as 256m");
        invalid(() -> Limits.parseSize("disk", "   "), "disk is empty");
    }

    @Test
    void aSizeThatIsNotANumberIsRefusedNamingFieldAndValue() {
        invalid(() -> Limits.parseSize("memory", "lots"), "memory 'lots' is not a size", "256m or 1g");
        invalid(() -> Limits.parseSize("memory", "m"), "memory 'm' is not a size");
        invalid(() -> Limits.parseSize("memory", "kb"), "memory 'kb' is not a size");
        invalid(() -> Limits.parseSize("memory", "12q"), "'12q' is not a size");
    }

    /** What Double.parseDouble would take but no one means as a size. */
    @Test
    void javaNumberSyntaxIsNotASize() {
        for (String s : new String[]{"1d", "1f", "1e3", "0x1p3", "Infinity", "NaN", "+5", "-1", ".5g", "1.g"}) {
            invalid(() -> Limits.parseSize("memory", s), "memory '" + s + "' is not a size");
        }
    }

    @Test
    void negativeNotANumberAndInfiniteSizesAreRefused() {
        invalid(() -> Limits.parseSize("memory", "-1"), "'-1' is not a size");
        invalid(() -> Limits.parseSize("memory", "-1g"), "'-1g' is not a size");
        invalid(() -> Limits.parseSize("memory", "NaN"), "'NaN' is not a size");
        invalid(() -> Limits.parseSize("memory", "Infinity"), "'Infinity' is not a size");
    }

    @Test
    void aSizeBeyondSixtyFourBitsIsRefusedNotWrapped() {
        invalid(() -> Limits.parseSize("disk", "9999999999t"), "'9999999999t' is not a size");
        invalid(() -> Limits.parseSize("disk", "1e30"), "'1e30' is not a size");
    }

    @Test
    void aHostileSizeIsEchoedPrintableAndShort() {
        String hostile = "\u001b[2J\r\nINFO forged" + "9".repeat(100_000);
        invalid(() -> Limits.parseSize("memory", hostile), "memory '?[2J??INFO forged99", "...' is not a size");
    }

    @Test
    void formatBytesPicksTheLargestExactUnit() {
        assertThat(Limits.formatBytes(64L << 30)).isEqualTo("64g");
        assertThat(Limits.formatBytes(1536L << 20)).isEqualTo("1536m");
        assertThat(Limits.formatBytes(3L << 10)).isEqualTo("3k");
        assertThat(Limits.formatBytes(1000)).isEqualTo("1000");
        assertThat(Limits.formatBytes(0)).isEqualTo("0");
    }

    @Test
    void formattedSizesParseBackToTheSameBytes() {
        for (long bytes : new long[] {0, 1, 1023, 1024, 1025, 16L << 20, (64L << 30) + 1, 3L << 40}) {
            assertThat(Limits.parseSize("x", Limits.formatBytes(bytes))).as("%d", bytes).isEqualTo(bytes);
        }
    }

    @Test
    void theDefaultsAreInsideEveryRange() {
        assertThat(new Limits(Limits.DEFAULTS.memoryBytes(), Limits.DEFAULTS.pids(), Limits.DEFAULTS.cpus(), Limits.DEFAULTS.timeout(),
                Limits.DEFAULTS.outputBytes(), Limits.DEFAULTS.fileSizeBytes(), Limits.DEFAULTS.openFiles(), Limits.DEFAULTS.diskBytes()))
                .isEqualTo(Limits.DEFAULTS);
    }

    @Test
    void memoryOutsideItsRangeIsRefusedWithTheRange() {
        invalid(() -> Limits.DEFAULTS.withMemoryBytes(15L << 20), "memory 15m is out of range: give 16m to 64g");
        invalid(() -> Limits.DEFAULTS.withMemoryBytes((64L << 30) + 1), "memory 68719476737 is out of range");
        assertThat(Limits.DEFAULTS.withMemoryBytes(16L << 20).memoryBytes()).isEqualTo(16L << 20);
        assertThat(Limits.DEFAULTS.withMemoryBytes(64L << 30).memoryBytes()).isEqualTo(64L << 30);
    }

    @Test
    void countsOutsideTheirRangesAreRefusedWithTheRange() {
        invalid(() -> Limits.DEFAULTS.withPids(7), "pids 7 is out of range: give 8 to 32768");
        invalid(() -> Limits.DEFAULTS.withPids(32769), "pids 32769");
        invalid(() -> Limits.DEFAULTS.withOpenFiles(15), "open files 15 is out of range: give 16 to 1048576");
        invalid(() -> Limits.DEFAULTS.withOpenFiles(Integer.MIN_VALUE), "open files -2147483648");
    }

    @Test
    void bytesOutsideTheirRangesAreRefusedWithTheRange() {
        invalid(() -> Limits.DEFAULTS.withOutputBytes(-1), "output -1 is out of range: give 0 to 1g");
        invalid(() -> Limits.DEFAULTS.withOutputBytes((1L << 30) + 1), "output");
        invalid(() -> Limits.DEFAULTS.withFileSizeBytes(1023), "file size 1023 is out of range: give 1k to 64g");
        invalid(() -> Limits.DEFAULTS.withDiskBytes(Long.MAX_VALUE), "disk", "give 1m to 64g");
    }

    @Test
    void cpusMustBeAFiniteNumberOfCoresInRange() {
        invalid(() -> Limits.DEFAULTS.withCpus(0.009), "cpus 0.009 is out of range: give a number of cores from 0.01 to 1024");
        invalid(() -> Limits.DEFAULTS.withCpus(1024.5), "cpus 1024.5");
        invalid(() -> Limits.DEFAULTS.withCpus(Double.NaN), "cpus NaN");
        invalid(() -> Limits.DEFAULTS.withCpus(Double.POSITIVE_INFINITY), "cpus Infinity");
        assertThat(Limits.DEFAULTS.withCpus(0.01).cpus()).isEqualTo(0.01);
    }

    @Test
    void aTimeoutOutsideTenMillisecondsToADayIsRefused() {
        invalid(() -> Limits.DEFAULTS.withTimeout(null), "timeout null is out of range: give 10ms to 24h");
        invalid(() -> Limits.DEFAULTS.withTimeout(Duration.ofMillis(9)), "timeout PT0.009S");
        invalid(() -> Limits.DEFAULTS.withTimeout(Duration.ofHours(24).plusNanos(1)), "give 10ms to 24h");
        invalid(() -> Limits.DEFAULTS.withTimeout(Duration.ofSeconds(-5)), "timeout PT-5S");
        assertThat(Limits.DEFAULTS.withTimeout(Duration.ofHours(24)).timeout()).isEqualTo(Duration.ofHours(24));
    }

    @Test
    void eachWitherChangesOnlyItsField() {
        Limits l = Limits.DEFAULTS.withPids(100);
        assertThat(l).isEqualTo(new Limits(Limits.DEFAULTS.memoryBytes(), 100, Limits.DEFAULTS.cpus(), Limits.DEFAULTS.timeout(),
                Limits.DEFAULTS.outputBytes(), Limits.DEFAULTS.fileSizeBytes(), Limits.DEFAULTS.openFiles(), Limits.DEFAULTS.diskBytes()));
        assertThat(Limits.DEFAULTS.withDiskBytes(1L << 20).withOpenFiles(16).withFileSizeBytes(1024))
                .extracting(Limits::diskBytes, Limits::openFiles, Limits::fileSizeBytes, Limits::memoryBytes)
                .containsExactly(1L << 20, 16, 1024L, Limits.DEFAULTS.memoryBytes());
    }
}
