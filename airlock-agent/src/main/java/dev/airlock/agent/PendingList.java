package dev.airlock.agent;

import dev.airlock.core.Printable;
import dev.airlock.core.SandboxAgent.FileInfo;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A LIST, answered by one FILEINFO per entry and DONE, or FAILED. The entries are collected on the
 * reader thread; at most {@link Frame#MAX_LIST}, each a plain name, so a hostile agent can neither
 * grow the list without bound nor smuggle in a path that points elsewhere.
 */
final class PendingList implements FileRequest {

    private final String directory;
    private final List<FileInfo> entries = new ArrayList<>();
    private final CompletableFuture<List<FileInfo>> result = new CompletableFuture<>();

    PendingList(String directory) {
        this.directory = directory;
    }

    CompletableFuture<List<FileInfo>> result() {
        return result;
    }

    @Override
    public boolean onFileInfo(FileInfo info) throws AgentProtocolException {
        String name = info.path();
        if (name.isEmpty() || name.equals(".") || name.equals("..") || name.indexOf('/') >= 0) {
            throw new AgentProtocolException("LIST of " + directory + " reported the entry name '"
                    + Printable.of(name, AgentClient.MAX_MESSAGE_CHARS) + "'");
        }
        if (entries.size() >= Frame.MAX_LIST) {
            throw new AgentProtocolException("LIST of " + directory + " reported more than " + Frame.MAX_LIST + " entries");
        }
        String path = directory.endsWith("/") ? directory + name : directory + "/" + name;
        entries.add(new FileInfo(path, info.type(), info.size(), info.mode(), info.modifiedMillis(), info.linkTarget()));
        return !result.isDone();
    }

    @Override
    public boolean onDone() {
        // Sorted so that the same directory always lists the same way, whatever the file system's order.
        entries.sort(Comparator.comparing(FileInfo::path));
        return result.complete(List.copyOf(entries));
    }

    @Override
    public boolean onFailed(int errno, String message) {
        return result.completeExceptionally(Errno.failure("cannot list " + directory, errno, message));
    }

    @Override
    public void fail(IOException cause) {
        result.completeExceptionally(cause);
    }
}
