package dev.airlock.agent;

import dev.airlock.core.SandboxAgent.FileInfo;

/**
 * A file request waiting for the agent. The {@code on...} methods run on the client's reader
 * thread only; they return false (or throw) when the agent's frame does not fit the request, which
 * the client treats as a protocol violation. By default a request expects none of DATA, FILEINFO
 * or DONE.
 */
sealed interface FileRequest extends PendingRequest permits PendingOperation, PendingStat, PendingList, PendingWalk, PendingFileRead {

    default boolean onData(byte[] chunk) throws AgentProtocolException {
        return false;
    }

    /** {@code info.path()} is the name the agent sent: empty for STAT, the entry name for LIST. */
    default boolean onFileInfo(FileInfo info) throws AgentProtocolException {
        return false;
    }

    default boolean onDone() {
        return false;
    }

    /** FAILED, with the agent's errno number (0 if no system call failed) and message. */
    boolean onFailed(int errno, String message);
}
