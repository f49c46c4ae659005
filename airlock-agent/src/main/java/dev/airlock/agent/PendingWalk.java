package dev.airlock.agent;

import dev.airlock.core.Printable;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.core.SandboxAgent.FileType;
import dev.airlock.core.SandboxAgent.Tree;
import dev.airlock.core.SandboxAgent.TreeBounds;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A WALK, answered by one FILEINFO per entry (its path relative to the walked directory) and
 * DONE, or FAILED. Runs on the reader thread and keeps only the regular files, at most
 * {@code maxFiles}; everything else is counted. An agent that reports more entries than asked, a
 * path deeper than asked, or a path that is not plain names joined by '/' breaks the protocol.
 */
final class PendingWalk implements FileRequest {

    private final String directory;
    private final TreeBounds bounds;
    private final List<FileInfo> files = new ArrayList<>();
    private final CompletableFuture<Tree> result = new CompletableFuture<>();
    private int entries;
    private int directoriesNotEntered;
    private int filesLeftOut;

    PendingWalk(String directory, TreeBounds bounds) {
        this.directory = directory;
        this.bounds = bounds;
    }

    CompletableFuture<Tree> result() {
        return result;
    }

    @Override
    public boolean onFileInfo(FileInfo info) throws AgentProtocolException {
        String relative = info.path();
        int depth = depthOf(relative);
        if (depth > bounds.maxDepth()) {
            throw new AgentProtocolException("WALK of " + directory + " reported an entry " + depth + " levels deep, below the asked "
                    + bounds.maxDepth());
        }
        if (++entries > bounds.maxEntries()) {
            throw new AgentProtocolException("WALK of " + directory + " reported more than the asked " + bounds.maxEntries() + " entries");
        }
        if (info.type() == FileType.DIRECTORY && depth == bounds.maxDepth()) {
            directoriesNotEntered++;
        } else if (info.type() == FileType.FILE) {
            if (files.size() < bounds.maxFiles()) {
                String path = directory.endsWith("/") ? directory + relative : directory + "/" + relative;
                files.add(new FileInfo(path, info.type(), info.size(), info.mode(), info.modifiedMillis(), null));
            } else {
                filesLeftOut++;
            }
        }
        return !result.isDone();
    }

    /** The number of names in {@code relative}, each a plain name (not empty, '.', or '..'). */
    private int depthOf(String relative) throws AgentProtocolException {
        int depth = 0;
        for (String part : relative.split("/", -1)) {
            if (part.isEmpty() || part.equals(".") || part.equals("..")) {
                throw new AgentProtocolException("WALK of " + directory + " reported the entry path '" + Printable.of(relative, AgentClient.MAX_MESSAGE_CHARS) + "'");
            }
            depth++;
        }
        return depth;
    }

    @Override
    public boolean onDone() {
        files.sort(Comparator.comparing(FileInfo::path));
        return result.complete(new Tree(files, entries, entries >= bounds.maxEntries(), directoriesNotEntered, filesLeftOut));
    }

    @Override
    public boolean onFailed(int errno, String message) {
        return result.completeExceptionally(Errno.failure("cannot walk " + directory, errno, message));
    }

    @Override
    public void fail(IOException cause) {
        result.completeExceptionally(cause);
    }
}
