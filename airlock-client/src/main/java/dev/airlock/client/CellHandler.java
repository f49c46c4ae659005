package dev.airlock.client;

/**
 * Receives a cell's outputs while it runs, with {@link Interpreter#run(String, java.time.Duration, CellHandler)}:
 * printed text as it is written, each result or display (a figure) when the kernel produces it. Called
 * in order on the calling thread. A handler that throws interrupts the cell (the context keeps its
 * state), and the exception propagates.
 */
public interface CellHandler {

    default void stdout(String text) {
    }

    default void stderr(String text) {
    }

    default void output(CellOutput output) {
    }
}
