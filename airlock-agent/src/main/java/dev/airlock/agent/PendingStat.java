package dev.airlock.agent;

import dev.airlock.core.SandboxAgent.FileInfo;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/** A STAT, answered by exactly one FILEINFO (with an empty name) or FAILED. */
record PendingStat(String path, CompletableFuture<FileInfo> result) implements FileRequest {

    PendingStat(String path) {
        this(path, new CompletableFuture<>());
    }

    @Override
    public boolean onFileInfo(FileInfo info) throws AgentProtocolException {
        if (!info.path().isEmpty()) {
            throw new AgentProtocolException("FILEINFO answering STAT of " + path + " carries a name");
        }
        return result.complete(new FileInfo(path, info.type(), info.size(), info.mode(), info.modifiedMillis(),
                info.linkTarget()));
    }

    @Override
    public boolean onFailed(int errno, String message) {
        return result.completeExceptionally(Errno.failure("cannot stat " + path, errno, message));
    }

    @Override
    public void fail(IOException cause) {
        result.completeExceptionally(cause);
    }
}
