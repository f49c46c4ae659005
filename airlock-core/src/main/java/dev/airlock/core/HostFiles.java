package dev.airlock.core;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;

/** Host file operations every layer needs the same way. */
public final class HostFiles {

    private HostFiles() {
    }

    /** Deletes a tree without following any symbolic link in it; a missing tree is fine. */
    public static void deleteTree(Path top) {
        try {
            // asked without an exception for what is not there (Files.exists makes one, with its stack, to say no)
            if (!Files.isDirectory(top, LinkOption.NOFOLLOW_LINKS)) {
                Files.deleteIfExists(top);
                return;
            }
            Files.walkFileTree(top, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException exc) throws IOException {
                    Files.deleteIfExists(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw AirlockException.internal("cannot remove " + top + ": " + e.getMessage(), e);
        }
    }
}
