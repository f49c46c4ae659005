package dev.airlock.client;

import java.io.FileNotFoundException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * The files of one sandbox: get data in before running code and results out after. Paths are
 * absolute paths as the sandbox sees them ({@code /workspace/data.csv}); the server resolves them
 * inside the sandbox, so links made by sandboxed code cannot reach the host. Transfers from an
 * {@link InputStream}, a {@link Path} or to an {@link OutputStream} are streamed, never held in
 * memory whole. Obtain it with {@link RemoteSandbox#files()}.
 */
public final class SandboxFiles {

    private final Transport transport;
    private final String sandboxId;

    SandboxFiles(Transport transport, String sandboxId) {
        this.transport = transport;
        this.sandboxId = sandboxId;
    }

    /** Writes {@code content} to {@code path}, creating parents and replacing an existing file. */
    public FileInfo write(String path, byte[] content) {
        Objects.requireNonNull(content, "content");
        return put(path, HttpRequest.BodyPublishers.ofByteArray(content), null);
    }

    /**
     * Streams {@code content} to {@code path} until its end; the stream is not closed. Larger than
     * the sandbox's {@code fileSize} limit → {@link PayloadTooLargeException}.
     */
    public FileInfo write(String path, InputStream content) {
        Objects.requireNonNull(content, "content");
        GuardedStream guarded = new GuardedStream(content);
        return put(path, HttpRequest.BodyPublishers.ofInputStream(() -> guarded), guarded);
    }

    /** Streams the local file {@code local} to {@code path} in the sandbox. */
    public FileInfo upload(Path local, String path) {
        HttpRequest.BodyPublisher body;
        try {
            body = HttpRequest.BodyPublishers.ofFile(local);
        } catch (FileNotFoundException e) {
            throw new UncheckedIOException(new NoSuchFileException(local.toString(), null, "cannot upload: no such local file"));
        }
        return put(path, body, null);
    }

    /** Reads the whole file into memory; use {@link #download} or {@link #open} for large files. */
    public byte[] read(String path) {
        HttpResponse<InputStream> r = get(path);
        try (InputStream in = r.body()) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw transport.broken(Transport.describe(r.request()), e);
        }
    }

    /**
     * Streams the file to {@code out}, which is not closed.
     *
     * @return the number of bytes copied
     */
    public long download(String path, OutputStream out) {
        Objects.requireNonNull(out, "out");
        HttpResponse<InputStream> r = get(path);
        try (InputStream in = r.body()) {
            return copy(in, out, path);
        } catch (IOException e) {
            throw transport.broken(Transport.describe(r.request()), e);
        }
    }

    /** Streams the file to the local file {@code local}, replacing it. */
    public long download(String path, Path local) {
        OutputStream out;
        try {
            out = Files.newOutputStream(local);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the download of " + path + " to " + local, e);
        }
        try (out) {
            return download(path, out);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the download of " + path + " to " + local, e);
        }
    }

    /** The file's content as a stream straight from the server; the caller must close it. */
    public InputStream open(String path) {
        return get(path).body();
    }

    /** What {@code path} is (a final symlink is not followed). */
    public FileInfo stat(String path) {
        return transport.json("GET", Transport.query(base("files", "stat"), "path", checked(path)), null, false, Json::file);
    }

    /** Whether {@code path} exists (as anything, a dangling symlink included). */
    public boolean exists(String path) {
        try {
            stat(path);
            return true;
        } catch (NotFoundException e) {
            return false;
        }
    }

    /** The entries of directory {@code dir}. */
    public List<FileInfo> list(String dir) {
        return transport.json("GET", Transport.query(base("files", "list"), "path", checked(dir)), null, false, Json::files);
    }

    /** Creates directory {@code path} and any missing parents. */
    public FileInfo mkdir(String path) {
        return mkdir(path, true);
    }

    /** Creates directory {@code path}; with {@code parents} false its parent must exist. */
    public FileInfo mkdir(String path, boolean parents) {
        return transport.json("POST", base("files", "mkdir"),
                RequestBodies.object("path", checked(path), "parents", parents), false, Json::file);
    }

    /** Moves {@code from} to {@code to} within the sandbox. */
    public FileInfo rename(String from, String to) {
        return transport.json("POST", base("files", "rename"),
                RequestBodies.object("from", checked(from), "to", checked(to)), false, Json::file);
    }

    /** Removes a file or an empty directory. A non-empty directory → {@link ConflictException}. */
    public void remove(String path) {
        remove(path, false);
    }

    /** Removes {@code path}; with {@code recursive}, a directory with everything in it. */
    public void remove(String path, boolean recursive) {
        String q = recursive
                ? Transport.query(base("files"), "path", checked(path), "recursive", "true")
                : Transport.query(base("files"), "path", checked(path));
        transport.noContent("DELETE", q, null);
    }

    private FileInfo put(String path, HttpRequest.BodyPublisher body, GuardedStream source) {
        HttpRequest request = transport.request(Transport.query(base("files"), "path", checked(path)), true)
                .header("Content-Type", "application/octet-stream")
                .PUT(body)
                .build();
        HttpResponse<InputStream> r;
        try {
            r = transport.open(request);
        } catch (AirlockConnectionException e) {
            if (source != null && source.failure != null) {
                throw new UncheckedIOException("reading the content to upload to " + path + " failed", source.failure);
            }
            throw e;
        }
        return Transport.parse(transport.readJson(r), Json::file, r.statusCode(), Transport.describe(request));
    }

    private HttpResponse<InputStream> get(String path) {
        HttpRequest request = transport.request(Transport.query(base("files"), "path", checked(path)), true)
                .header("Accept", "application/octet-stream")
                .GET()
                .build();
        return transport.open(request);
    }

    private String base(String... rest) {
        String[] segments = new String[3 + rest.length];
        segments[0] = "v1";
        segments[1] = "sandboxes";
        segments[2] = sandboxId;
        System.arraycopy(rest, 0, segments, 3, rest.length);
        return Transport.path(segments);
    }

    private static String checked(String path) {
        Objects.requireNonNull(path, "path");
        if (!path.startsWith("/")) {
            throw new IllegalArgumentException("path '" + Errors.sanitize(path, 100)
                    + "' must be absolute in the sandbox's view, such as /workspace/data.csv");
        }
        if (path.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("path contains a NUL byte");
        }
        return path;
    }

    /** Copies; a failure of {@code out} is the caller's, not a broken connection. */
    private static long copy(InputStream in, OutputStream out, String path) throws IOException {
        byte[] buf = new byte[64 * 1024];
        long total = 0;
        int n;
        while ((n = in.read(buf)) >= 0) {
            try {
                out.write(buf, 0, n);
            } catch (IOException e) {
                throw new UncheckedIOException("writing the download of " + path + " failed", e);
            }
            total += n;
        }
        return total;
    }

    /** Remembers a failure of the caller's stream, so it is not reported as a network problem. */
    private static final class GuardedStream extends FilterInputStream {
        volatile IOException failure;

        GuardedStream(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            try {
                return super.read();
            } catch (IOException e) {
                failure = e;
                throw e;
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            try {
                return super.read(b, off, len);
            } catch (IOException e) {
                failure = e;
                throw e;
            }
        }

        @Override
        public void close() {
            // the caller's stream stays open: it is theirs to close
        }
    }
}
