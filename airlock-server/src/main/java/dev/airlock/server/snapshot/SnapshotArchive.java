package dev.airlock.server.snapshot;

import dev.airlock.server.command.Command.SnapshotView;
import dev.airlock.server.wire.Json;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

/**
 * A snapshot as a tar archive ({@code GET /v1/snapshots/{id}/archive}): its files with their modes,
 * written only once every file was checked against its digest, and names percent-encoded so that
 * nothing the sandbox named can act on whoever lists the archive.
 */
final class SnapshotArchive {

    private SnapshotArchive() {
    }

    /**
     * Writes the snapshot's files to {@code out} as a tar archive (paths relative to /, their modes),
     * after checking the manifest and every file's content against their digests: nothing is
     * written for an altered snapshot.
     */
    static void write(SnapshotStore store, SnapshotView s, OutputStream out) throws IOException {
        JsonNode manifest = store.verifiedManifest(s);
        for (JsonNode f : manifest.path("files")) {
            store.readBlob(s, f.path("sha256").asString(), "the content of " + Json.printable(f.path("path").asString()),
                    in -> in.transferTo(OutputStream.nullOutputStream()));
        }
        TarArchiveOutputStream tar = new TarArchiveOutputStream(out);
        tar.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        for (JsonNode f : manifest.path("files")) {
            TarArchiveEntry e = new TarArchiveEntry(archiveName(f.path("path").asString().substring(1)));
            e.setMode(f.path("mode").asInt() & 0777);
            e.setSize(f.path("size").asLong());
            e.setModTime(s.createdAt().toEpochMilli());
            tar.putArchiveEntry(e);
            Files.copy(store.blob(f.path("sha256").asString()), tar);
            tar.closeArchiveEntry();
        }
        tar.finish();
        tar.flush();
    }

    /**
     * A file's name in the archive: its path, with every character that a terminal or another
     * system could take for something else percent-encoded (its UTF-8 bytes as %XX): C0 and C1
     * control characters (a carriage return, an escape sequence's ESC or CSI), DEL, the backslash
     * (a separator elsewhere), and '%' itself, so that the encoding is undone exactly. The names come
     * from the sandbox: hostile input to whoever lists the archive.
     */
    static String archiveName(String path) {
        StringBuilder b = new StringBuilder(path.length());
        path.codePoints().forEach(cp -> {
            if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == '\\' || cp == '%') {
                for (byte octet : new String(Character.toChars(cp)).getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
                    b.append('%').append(String.format("%02X", octet & 0xff));
                }
            } else {
                b.appendCodePoint(cp);
            }
        });
        return b.toString();
    }
}
