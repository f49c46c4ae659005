package dev.airlock.server.policy;

import dev.airlock.core.AirlockException;
import dev.airlock.core.YamlField;
import org.junit.jupiter.api.Test;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.api.lowlevel.Compose;

import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class YamlFieldTest {

    private static YamlField node(String yaml) {
        return new YamlField("p.yaml", new Compose(LoadSettings.builder().build()).composeString(yaml).orElseThrow(), "");
    }

    @Test
    void errorsNameTheFileTheLineAndTheFieldPath() {
        YamlField memory = node("a:\n  b:\n    - x\n    - {memory: lots}\n").map(Set.of("a")).get("a")
                .map(null).get("b").list().get(1).map(Set.of("memory")).get("memory");
        assertThatThrownBy(memory::size).isInstanceOf(AirlockException.class)
                .hasMessageStartingWith("p.yaml line 4, a.b[1].memory: ");
    }

    @Test
    void anUnknownOrRepeatedFieldIsRefusedAtItsKey() {
        assertThatThrownBy(() -> node("x: 1\n\ny: 2\n").map(Set.of("x", "z")))
                .hasMessage("p.yaml line 3, y: unknown field 'y': allowed here are x, z");
        assertThatThrownBy(() -> node("x: 1\nx: 2\n").map(null))
                .hasMessage("p.yaml line 2, x: 'x' appears twice: keep one");
    }

    @Test
    void scalarsAreCheckedByTheirKind() {
        assertThat(node("1_000").integer(1, 2000)).isEqualTo(1000);
        assertThatThrownBy(() -> node("3001").integer(1, 3000)).hasMessageContaining("3001 is out of range: give 1 to 3000");
        assertThat(node("false").bool()).isFalse();
        assertThatThrownBy(() -> node("yes").bool()).hasMessageContaining("'yes' is not true or false");
        assertThat(node("0.5").decimal()).isEqualTo(0.5);
        assertThat(node("1m").size()).isEqualTo(1L << 20);
        assertThatThrownBy(() -> node("[a]").string()).hasMessageContaining("expected a single value");
    }

    @Test
    void aSubtreeBecomesJsonWithWholeNumbersAsNumbers() {
        assertThat(ProfileReader.toJson(node("{allow: [{host: a.example, ports: [443]}], maxBytes: 99999999999999999999, tag: x1}")).toString())
                .isEqualTo("{\"allow\":[{\"host\":\"a.example\",\"ports\":[443]}],\"maxBytes\":\"99999999999999999999\",\"tag\":\"x1\"}");
    }

    @Test
    void namesAreCheckedAgainstTheirPattern() {
        assertThat(node("{ok-1: {}}").named(PolicyFile.NAME)).containsOnlyKeys("ok-1");
        assertThatThrownBy(() -> node("{Bad: {}}").named(PolicyFile.NAME)).hasMessageContaining("'Bad' is not a valid name");
    }
}
