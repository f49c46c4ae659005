package dev.airlock.agent;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/** A SPARE, answered by FORKED with the spare supervisor's pid in the sandbox, or by FAILED. */
record PendingSpare(CompletableFuture<Integer> pid) implements PendingRequest {

    PendingSpare() {
        this(new CompletableFuture<>());
    }

    boolean onForked(int supervisor) {
        return supervisor > 0 && pid.complete(supervisor);
    }

    boolean onFailed(int errno, String message) {
        return pid.completeExceptionally(Errno.failure("cannot fork a spare supervisor", errno, message));
    }

    @Override
    public void fail(IOException cause) {
        pid.completeExceptionally(cause);
    }
}
