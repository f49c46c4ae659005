package dev.airlock.core;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The one place untrusted text is made printable: what an attacker could slip into a log line or a message. */
class PrintableTest {

    private static final String PRINTABLE_ASCII = "[\\x20-\\x7e]*";

    @Test
    void terminalEscapesAndLineBreaksBecomeQuestionMarks() {
        assertThat(Printable.of("bad\u0000\n\u001b[31mname\r\n2026-01-01 INFO forged\u007f"))
                .isEqualTo("bad???[31mname??2026-01-01 INFO forged?");
    }

    @Test
    void nonAsciiAndBidirectionalOverridesBecomeQuestionMarks() {
        assertThat(Printable.of("caf\u00e9 \u202egnp.exe \u2028 \ufeff")).isEqualTo("caf? ?gnp.exe ? ?");
    }

    @Test
    void aSurrogatePairIsOneQuestionMarkAndLoneSurrogatesAreReplaced() {
        assertThat(Printable.of("a\ud83d\ude00b")).isEqualTo("a?b");
        assertThat(Printable.of("\ude00x\ud83d")).isEqualTo("?x?");
        assertThat(Printable.of("\ud83d\ud83d\ude00")).isEqualTo("??");
    }

    @Test
    void textOverTheCapIsCutWithinItAndSaysSo() {
        String cut = Printable.of("x".repeat(10_000), 50);
        assertThat(cut).hasSize(50).isEqualTo("x".repeat(47) + "...");
        assertThat(Printable.of("y".repeat(1_000))).hasSize(Printable.MAX).endsWith("y...");
    }

    @Test
    void textExactlyAtTheCapIsKeptWhole() {
        assertThat(Printable.of("z".repeat(50), 50)).isEqualTo("z".repeat(50));
        assertThat(Printable.of("z".repeat(51), 50)).isEqualTo("z".repeat(47) + "...");
    }

    @Test
    void aCutNeverSplitsASurrogatePairIntoPrintableHalves() {
        String emojis = "\ud83d\ude00".repeat(100);
        assertThat(Printable.of(emojis, 10)).isEqualTo("???????...");
        assertThat(Printable.of(emojis, 100)).isEqualTo("?".repeat(100));
    }

    @Test
    void nullIsShownAsNull() {
        assertThat(Printable.of(null)).isEqualTo("null");
        assertThat(Printable.quoted(null, 10)).isEqualTo("null");
    }

    @Test
    void aCapWithNoRoomForTheCutMarkIsRefused() {
        assertThatThrownBy(() -> Printable.of("abc", 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max must leave room for '...'").hasMessageContaining("was 3");
        assertThatThrownBy(() -> Printable.quoted("abc", -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("was -1");
    }

    @Test
    void everyCharacterComesOutPrintable() {
        StringBuilder all = new StringBuilder();
        for (char c = 0; c < Character.MAX_VALUE; c++) {
            all.append(c);
        }
        String text = all.toString();
        assertThat(Printable.of(text, text.length())).matches(PRINTABLE_ASCII);
        assertThat(Printable.quoted(text, text.length())).matches(PRINTABLE_ASCII);
    }

    @Test
    void quotedEscapesWhatItShowsSoTheReaderSeesTheBytes() {
        assertThat(Printable.quoted("0\n\t\"q\"\\\r\u001b[1m\u00e9", 100))
                .isEqualTo("\"0\\n\\t\\\"q\\\"\\\\\\r\\u001b[1m\\u00e9\"");
        assertThat(Printable.quoted("\ud83d", 100)).isEqualTo("\"\\ud83d\"");
    }

    @Test
    void quotedShowsAtMostItsCharactersAndMarksTheCutInsideTheQuotes() {
        assertThat(Printable.quoted("abcdef", 3)).isEqualTo("\"abc...\"");
        assertThat(Printable.quoted("abc", 3)).isEqualTo("\"abc\"");
        assertThat(Printable.quoted("\n".repeat(1_000_000), 400)).hasSize(2 * 400 + 5);
    }

    @Test
    void aForgedLogLineStaysOnOneLine() {
        String forged = "GET /\r\n[main] INFO  dev.airlock.server - approved by admin";
        assertThat(Printable.of(forged)).doesNotContain("\n", "\r");
        assertThat(Printable.quoted(forged, 400)).doesNotContain("\n", "\r");
    }
}
