package dev.airlock.server.command;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Language;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** "A command, or a language with code, never both": the rule every door hands its fields to. */
class ExecSourceTest {

    @Test
    void aCommandRunsAsGivenAndCannotBeChangedAfterwards() {
        List<String> argv = new ArrayList<>(List.of("ls", "-la"));
        ExecSource s = ExecSource.of(argv, null, null);
        argv.add("/etc");
        assertThat(s).isEqualTo(new ExecSource.Command(List.of("ls", "-la")));
    }

    @Test
    void codeTakesItsLanguageOrLeavesItToTheSandboxDefault() {
        assertThat(ExecSource.of(null, "python", "print(1)")).isEqualTo(new ExecSource.Code(Language.PYTHON, "print(1)"));
        assertThat(ExecSource.of(null, null, "print(1)")).isEqualTo(new ExecSource.Code(null, "print(1)"));
    }

    @Test
    void aCommandWithCodeOrALanguageIsRefused() {
        assertThatThrownBy(() -> ExecSource.of(List.of("ls"), null, "print(1)")).hasMessageContaining("not both");
        assertThatThrownBy(() -> ExecSource.of(List.of("ls"), "python", null)).hasMessageContaining("not both");
    }

    @Test
    void nothingToRunOrALanguageWithoutCodeIsRefused() {
        assertThatThrownBy(() -> ExecSource.of(null, null, null)).isInstanceOf(AirlockException.class)
                .hasMessageContaining("give 'command'");
        assertThatThrownBy(() -> ExecSource.of(null, "python", null)).hasMessageContaining("'language' and 'code'");
    }

    @Test
    void anEmptyCommandIsRefused() {
        assertThatThrownBy(() -> ExecSource.of(List.of(), null, null)).hasMessageContaining("'command' is empty");
    }

    @Test
    void anUnknownLanguageIsRefusedByEveryDoorTheSameWay() {
        assertThatThrownBy(() -> ExecSource.of(null, "cobol\u0007", "x")).isInstanceOf(AirlockException.class)
                .hasMessageNotContaining("\u0007");
    }
}
