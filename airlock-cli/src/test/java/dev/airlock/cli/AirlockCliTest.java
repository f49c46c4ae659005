package dev.airlock.cli;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What every command pays before it runs: the command line's model. */
class AirlockCliTest {

    /**
     * Picocli looks up Groovy's Closure class unless told not to: a class missing from the class
     * path, so the lookup opens every jar (about 55 ms of a one-shot, measured with AIRLOCK_TRACE's
     * "command line model built"). The CLI tells it not to before it builds any model.
     */
    @Test
    void theCommandLineIsBuiltWithoutPicocliLookingForGroovy() {
        assertThat(AirlockCli.execute("--version")).isZero();
        assertThat(System.getProperty("picocli.disable.closures")).isEqualTo("true");
    }
}
