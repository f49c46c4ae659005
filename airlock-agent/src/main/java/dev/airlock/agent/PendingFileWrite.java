package dev.airlock.agent;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/** A WRITE_FILE waiting for DONE or FAILED. */
record PendingFileWrite(String path, CompletableFuture<Void> result) implements PendingRequest {

    PendingFileWrite(String path) {
        this(path, new CompletableFuture<>());
    }

    @Override
    public void fail(IOException cause) {
        result.completeExceptionally(cause);
    }
}
