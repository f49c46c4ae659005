package dev.airlock.cli.bench;

import java.io.Console;
import java.io.PrintStream;

/**
 * What the benchmark is doing, on stderr: on a terminal one line per case, redrawn with a count;
 * otherwise the case's name and then plain dots, as a log file wants it.
 */
public final class Progress {

    private final PrintStream err = System.err;
    private final boolean terminal;
    private String label;
    private int total;
    private int done;
    private long started;

    public Progress() {
        Console console = System.console();
        terminal = console != null && console.isTerminal();
    }

    public synchronized void begin(String label, int total) {
        this.label = label;
        this.total = total;
        this.done = 0;
        this.started = System.nanoTime();
        if (terminal) {
            draw();
        } else {
            err.print("measuring " + label + " ");
            err.flush();
        }
    }

    public synchronized void step() {
        done++;
        if (terminal) {
            draw();
        } else if (done == 1 || done % 5 == 0) {
            err.print(".");
            err.flush();
        }
    }

    /** A free-form status for long steps (creating hundreds of sandboxes). */
    public synchronized void note(String text) {
        if (terminal) {
            err.print("\r\033[K" + label + "  " + text);
        } else {
            err.print(" [" + text + "] ");
        }
        err.flush();
    }

    public synchronized void end() {
        double s = (System.nanoTime() - started) / 1e9;
        if (terminal) {
            err.printf("\r\033[K%s  done in %.1fs%n", label, s);
        } else {
            err.println();
        }
        err.flush();
    }

    private void draw() {
        double s = (System.nanoTime() - started) / 1e9;
        err.printf("\r\033[K%s  %d/%d  %.1fs", label, done, total, s);
        err.flush();
    }
}
