package dev.airlock.agent;

import java.io.IOException;

/** A request waiting for the agent's answer, keyed by its id. */
sealed interface PendingRequest permits RemoteProcess, FileRequest, PortStream, PendingSpare {

    /** The connection broke before the answer came. */
    void fail(IOException cause);
}
