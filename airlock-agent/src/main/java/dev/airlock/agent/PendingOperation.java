package dev.airlock.agent;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/** A request answered by DONE or FAILED only: one WRITE_FILE frame, MKDIR, REMOVE or RENAME. */
record PendingOperation(String what, CompletableFuture<Void> result) implements FileRequest {

    /** {@code what} starts the error message, e.g. "cannot write /tmp/a". */
    PendingOperation(String what) {
        this(what, new CompletableFuture<>());
    }

    @Override
    public boolean onDone() {
        return result.complete(null);
    }

    @Override
    public boolean onFailed(int errno, String message) {
        return result.completeExceptionally(Errno.failure(what, errno, message));
    }

    @Override
    public void fail(IOException cause) {
        result.completeExceptionally(cause);
    }
}
