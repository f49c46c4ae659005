package dev.airlock.server.command;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;
import dev.airlock.server.wire.LimitChanges;
import dev.airlock.server.wire.LimitField;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The one mapping of limit names to {@link Limits}, shared by REST, MCP and policy files. */
class LimitChangesTest {

    @Test
    void eachNameSetItsOwnFieldAndNoOther() {
        Map<String, Number> raw = Map.of("memory", 300L << 20, "pids", 77, "cpus", 0.5, "timeoutSeconds", 12.5,
                "outputLimit", 2L << 20, "fileSize", 3L << 20, "openFiles", 99, "disk", 40L << 20);
        Limits l = LimitChanges.read(raw::containsKey, f -> raw.get(f.wireName())).applyTo(Limits.DEFAULTS);
        assertThat(l).isEqualTo(new Limits(300L << 20, 77, 0.5, Duration.ofMillis(12_500), 2L << 20, 3L << 20, 99, 40L << 20));
    }

    @Test
    void absentNamesKeepTheProfilesDefaults() {
        Limits base = Limits.DEFAULTS.withPids(11);
        LimitChanges c = LimitChanges.read(name -> name.equals("memory"), f -> 128L << 20);
        assertThat(c.values()).containsOnlyKeys(LimitField.MEMORY);
        assertThat(c.applyTo(base)).isEqualTo(base.withMemoryBytes(128L << 20));
        assertThat(LimitChanges.NONE.applyTo(base)).isEqualTo(base);
    }

    @Test
    void aReaderIsAskedOnlyForPresentNamesAndANullValueChangesNothing() {
        LimitChanges c = LimitChanges.read(name -> name.equals("cpus"), f -> {
            assertThat(f).isEqualTo(LimitField.CPUS);
            return null;
        });
        assertThat(c.values()).isEmpty();
    }

    @Test
    void aValueOutOfRangeIsRefusedWhenApplied() {
        LimitChanges huge = LimitChanges.read(name -> name.equals("cpus"), f -> 1e9);
        assertThatThrownBy(() -> huge.applyTo(Limits.DEFAULTS)).isInstanceOf(AirlockException.class).hasMessageContaining("cpus");
    }

    @Test
    void everyWireNameIsKnownAndNoOtherIs() {
        assertThat(LimitField.wireNames()).containsExactly("memory", "pids", "cpus", "timeoutSeconds", "outputLimit", "fileSize",
                "openFiles", "disk");
        LimitField.wireNames().forEach(n -> assertThat(LimitField.named(n)).isPresent());
        assertThat(LimitField.named("ram")).isEmpty();
    }
}
