package dev.airlock.cli;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** What every command pays before it runs: the command line's model. */
class AirlockCliTest {

    /**
     * Picocli looks up Groovy's Closure class unless told not to: a class missing from the class
     * path, so the lookup opens every jar (about 50 ms: AIRLOCK_TRACE's "command line model built").
     * The CLI tells it not to before it builds any model. A command that starts a process pays
     * the same opening there instead (JDK 25's ProcessBuilder looks up its logger, a service lookup
     * through every jar); one that starts none ({@code run --server}, {@code approvals}) is faster.
     */
    @Test
    void theCommandLineIsBuiltWithoutPicocliLookingForGroovy() {
        assertThat(AirlockCli.execute("--version")).isZero();
        assertThat(System.getProperty("picocli.disable.closures")).isEqualTo("true");
    }
}
