package dev.airlock.core;

/**
 * The size of a pseudo-terminal, in character cells. An {@link ExecRequest} with a size runs its
 * command on a new pseudo-terminal the sandbox's agent allocates (an interactive shell, a
 * program that needs a terminal); {@link Execution#resize} changes it while the command runs.
 *
 * @param rows 1 to {@value #MAX}
 * @param cols 1 to {@value #MAX}
 */
public record TerminalSize(int rows, int cols) {

    /** The most rows or columns a terminal may have (the agent refuses more). */
    public static final int MAX = 1000;
    /** The size a terminal gets when none is given. */
    public static final TerminalSize DEFAULT = new TerminalSize(24, 80);

    public TerminalSize {
        if (rows < 1 || rows > MAX || cols < 1 || cols > MAX) {
            throw AirlockException.invalid("terminal size " + rows + "x" + cols + " is out of range: give rows and cols from 1 to " + MAX);
        }
    }
}
