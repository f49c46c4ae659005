package dev.airlock.core;

import org.junit.jupiter.api.Test;

import static dev.airlock.core.Refusals.invalid;
import static org.assertj.core.api.Assertions.assertThat;

/** The languages of a one-shot run, by name or common alias. */
class LanguageTest {

    @Test
    void everyLanguageParsesFromItsOwnIdInAnyCase() {
        for (Language l : Language.values()) {
            assertThat(Language.parse(l.id())).isEqualTo(l);
            assertThat(Language.parse(" " + l.id().toUpperCase() + " ")).isEqualTo(l);
        }
    }

    @Test
    void commonAliasesNameTheirLanguage() {
        assertThat(Language.parse("py")).isEqualTo(Language.PYTHON);
        assertThat(Language.parse("Python3")).isEqualTo(Language.PYTHON);
        assertThat(Language.parse("js")).isEqualTo(Language.JAVASCRIPT);
        assertThat(Language.parse("node")).isEqualTo(Language.JAVASCRIPT);
        assertThat(Language.parse("nodejs")).isEqualTo(Language.JAVASCRIPT);
    }

    @Test
    void anUnknownLanguageIsRefusedListingTheKnownOnes() {
        invalid(() -> Language.parse("ruby"), "unknown language 'ruby': choose one of python, javascript, bash, sh, java");
        invalid(() -> Language.parse(null), "unknown language 'null'");
        invalid(() -> Language.parse(""), "unknown language ''");
    }

    @Test
    void aHostileLanguageNameIsEchoedPrintableAndShort() {
        invalid(() -> Language.parse("py\r\n\u001b[0mthon" + "x".repeat(10_000)), "unknown language 'py???[0mthonxxx", "...': choose one of");
    }

    @Test
    void theCodeFileLivesUnderTheCodeDirectoryAndIsRunByTheInterpreter() {
        for (Language l : Language.values()) {
            assertThat(l.codePath()).startsWith(Language.CODE_DIR + "/");
            assertThat(l.command()).containsExactly(l.interpreter(), l.codePath());
        }
        assertThat(Language.JAVA.codePath()).endsWith("/Main.java");
        assertThat(Language.PYTHON.command()).containsExactly("python3", "/tmp/airlock/main.py");
    }
}
