package dev.airlock.server.command;

import dev.airlock.core.ExecResult;
import dev.airlock.server.output.SpilledOutput;

import java.time.Instant;
import java.util.List;

/** A background process as a command answers it: what a door may read and show, no handle on the process. */
public interface ProcessView {

    /** The most of each stream a process's JSON carries; all of it is at {@code GET .../processes/{pid}/stdout} (or stderr). */
    int OUTPUT_PREVIEW_BYTES = 64 * 1024;

    String id();

    List<String> command();

    Instant startedAt();

    /** Its pid inside the sandbox. */
    int pid();

    /** Whether it runs on a pseudo-terminal ({@code "tty": true}). */
    boolean tty();

    boolean running();

    /** How it ended (with empty streams: its output is in {@link #output()}), or null while it runs. */
    ExecResult result();

    /** Its output, spilled to files as it came. */
    SpilledOutput output();
}
