package dev.airlock.client;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FilesTest {

    static final String ID = SandboxLifecycleTest.ID;
    static final String FILES = "/v1/sandboxes/" + ID + "/files";
    static final String INFO = "{\"path\": \"/workspace/a.txt\", \"type\": \"file\", \"size\": 2, \"mode\": 420, "
            + "\"modifiedAt\": \"2026-11-29T21:00:00Z\", \"linkTarget\": null}";
    static final int MB = 1024 * 1024;

    FakeAirlock server;
    Airlock airlock;
    SandboxFiles files;

    @BeforeEach
    void start() throws IOException {
        server = new FakeAirlock();
        server.reply("GET", "/v1/sandboxes/" + ID, 200, SandboxLifecycleTest.SANDBOX);
        airlock = server.client();
        files = airlock.get(ID).files();
    }

    @AfterEach
    void stop() {
        airlock.close();
        server.close();
    }

    @Test
    void writeSendsTheRawBytesToThePathAndMapsTheFileInfo() {
        server.reply("PUT", FILES, 201, INFO);

        FileInfo info = files.write("/workspace/a.txt", "hi".getBytes());

        FakeAirlock.Recorded r = server.last();
        assertThat(r.rawQuery()).isEqualTo("path=/workspace/a.txt");
        assertThat(r.header("Content-Type")).isEqualTo("application/octet-stream");
        assertThat(r.bodyText()).isEqualTo("hi");
        assertThat(info).isEqualTo(new FileInfo("/workspace/a.txt", FileType.FILE, 2, 420, Instant.parse("2026-11-29T21:00:00Z"), null));
        assertThat(info.name()).isEqualTo("a.txt");
    }

    @Test
    void pathsWithSpecialCharactersArePercentEncodedInTheQuery() {
        server.reply("GET", FILES + "/stat", 200, INFO);

        files.stat("/workspace/a b&c=d+é");

        assertThat(server.last().rawQuery()).isEqualTo("path=/workspace/a%20b%26c%3Dd%2B%C3%A9");
    }

    @Test
    void uploadOfAnInputStreamIsStreamedNotBuffered() {
        long size = 20L * MB;
        CountDownLatch serverHasFirstMegabyte = new CountDownLatch(1);
        AtomicLong received = new AtomicLong();
        CRC32 receivedCrc = new CRC32();
        server.onStreaming("PUT", FILES, ex -> {
            try (InputStream in = ex.getRequestBody()) {
                byte[] buf = new byte[64 * 1024];
                int n;
                while ((n = in.read(buf)) >= 0) {
                    receivedCrc.update(buf, 0, n);
                    if (received.addAndGet(n) >= MB) {
                        serverHasFirstMegabyte.countDown();
                    }
                }
            }
            FakeAirlock.send(ex, 201, "application/json", INFO.replace("\"size\": 2", "\"size\": " + received.get()));
        });
        CRC32 sentCrc = new CRC32();
        // generates 20 MB on the fly and, halfway, waits until the server has seen the first MB:
        // a client that buffered the whole stream before sending would never get past this point
        InputStream source = new InputStream() {
            long produced;

            @Override
            public int read() {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (produced == size) {
                    return -1;
                }
                if (produced >= size / 2 && serverHasFirstMegabyte.getCount() > 0) {
                    try {
                        if (!serverHasFirstMegabyte.await(20, TimeUnit.SECONDS)) {
                            throw new AssertionError("the server got nothing while the client read half the stream");
                        }
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                }
                int n = (int) Math.min(len, size - produced);
                for (int i = 0; i < n; i++) {
                    b[off + i] = (byte) ((produced + i) * 31 % 251);
                }
                sentCrc.update(b, off, n);
                produced += n;
                return n;
            }
        };

        FileInfo info = files.write("/workspace/big.bin", source);

        assertThat(received.get()).isEqualTo(size);
        assertThat(receivedCrc.getValue()).isEqualTo(sentCrc.getValue());
        assertThat(info.size()).isEqualTo(size);
        assertThat(server.last().header("Transfer-encoding")).isEqualTo("chunked");
    }

    @Test
    void aFailingSourceStreamIsReportedAsItselfNotAsANetworkProblem() {
        server.onStreaming("PUT", FILES, ex -> {
            ex.getRequestBody().readAllBytes();
            FakeAirlock.send(ex, 201, "application/json", INFO);
        });
        InputStream broken = new InputStream() {
            @Override
            public int read() throws IOException {
                throw new IOException("disk on fire");
            }
        };

        assertThatThrownBy(() -> files.write("/workspace/x", broken))
                .isInstanceOf(UncheckedIOException.class)
                .hasRootCauseMessage("disk on fire");
    }

    @Test
    void uploadOfALocalFileSendsItsContent(@TempDir Path tmp) throws IOException {
        Path local = tmp.resolve("data.csv");
        Files.writeString(local, "a,b\n1,2\n");
        server.reply("PUT", FILES, 201, INFO);

        files.upload(local, "/workspace/data.csv");

        assertThat(server.last().bodyText()).isEqualTo("a,b\n1,2\n");
        assertThat(server.last().rawQuery()).isEqualTo("path=/workspace/data.csv");
    }

    @Test
    void anUploadOverTheFileSizeLimitIsPayloadTooLarge() {
        server.reply("PUT", FILES, 413, FakeAirlock.error("too_large", "/workspace/a is over the sandbox's fileSize limit of 64m"));

        assertThatThrownBy(() -> files.write("/workspace/a", new byte[10]))
                .isInstanceOf(PayloadTooLargeException.class)
                .hasMessageContaining("fileSize limit");
    }

    @Test
    void downloadStreamsTheFileToTheOutputStream() throws IOException {
        long size = 20L * MB;
        server.on("GET", FILES, ex -> {
            ex.getResponseHeaders().set("Content-Type", "application/octet-stream");
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                byte[] chunk = new byte[MB];
                for (int i = 0; i < 20; i++) {
                    java.util.Arrays.fill(chunk, (byte) i);
                    out.write(chunk);
                }
            }
        });
        AtomicLong written = new AtomicLong();
        CRC32 crc = new CRC32();
        OutputStream sink = new OutputStream() {
            @Override
            public void write(int b) {
                crc.update(b);
                written.incrementAndGet();
            }

            @Override
            public void write(byte[] b, int off, int len) {
                crc.update(b, off, len);
                written.addAndGet(len);
            }
        };

        long copied = files.download("/workspace/big.bin", sink);

        CRC32 expected = new CRC32();
        byte[] chunk = new byte[MB];
        for (int i = 0; i < 20; i++) {
            java.util.Arrays.fill(chunk, (byte) i);
            expected.update(chunk);
        }
        assertThat(copied).isEqualTo(size);
        assertThat(written.get()).isEqualTo(size);
        assertThat(crc.getValue()).isEqualTo(expected.getValue());
        assertThat(server.last().rawQuery()).isEqualTo("path=/workspace/big.bin");
    }

    @Test
    void readReturnsTheBytesAndDownloadToAPathWritesThem(@TempDir Path tmp) throws IOException {
        server.on("GET", FILES, ex -> FakeAirlock.send(ex, 200, "application/octet-stream", "content"));

        assertThat(files.read("/workspace/a.txt")).isEqualTo("content".getBytes());
        assertThat(files.download("/workspace/a.txt", tmp.resolve("out"))).isEqualTo(7);
        assertThat(Files.readString(tmp.resolve("out"))).isEqualTo("content");
        try (InputStream in = files.open("/workspace/a.txt")) {
            assertThat(in.readAllBytes()).isEqualTo("content".getBytes());
        }
    }

    @Test
    void readingADirectoryIsABadRequest() {
        server.reply("GET", FILES, 400, FakeAirlock.error("invalid_argument", "/workspace is not a regular file"));

        assertThatThrownBy(() -> files.read("/workspace")).isInstanceOf(BadRequestException.class);
        assertThatThrownBy(() -> files.download("/workspace", new ByteArrayOutputStream())).isInstanceOf(BadRequestException.class);
    }

    @Test
    void listStatMkdirRenameAndRemoveUseTheContractEndpoints() {
        server.reply("GET", FILES + "/list", 200, "{\"entries\": [" + INFO + ", "
                + "{\"path\": \"/workspace/l\", \"type\": \"symlink\", \"size\": 5, \"mode\": 511, \"modifiedAt\": \"2026-11-29T21:00:00Z\", \"linkTarget\": \"/etc\"}]}");
        server.reply("GET", FILES + "/stat", 404, FakeAirlock.error("not_found", "no such file"));
        server.reply("POST", FILES + "/mkdir", 201, "{\"path\": \"/workspace/d\", \"type\": \"directory\", \"size\": 0, \"mode\": 493}");
        server.reply("POST", FILES + "/rename", 200, INFO);
        server.reply("DELETE", FILES, 204, null);

        assertThat(files.list("/workspace")).extracting(FileInfo::type).containsExactly(FileType.FILE, FileType.SYMLINK);
        assertThat(files.list("/workspace").get(1).linkTarget()).isEqualTo("/etc");
        assertThat(server.last().rawQuery()).isEqualTo("path=/workspace");

        assertThat(files.exists("/workspace/nope")).isFalse();

        assertThat(files.mkdir("/workspace/d").isDirectory()).isTrue();
        assertThat(server.last().bodyText()).isEqualTo("{\"path\":\"/workspace/d\",\"parents\":true}");

        files.rename("/workspace/b.txt", "/workspace/a.txt");
        assertThat(server.last().bodyText()).isEqualTo("{\"from\":\"/workspace/b.txt\",\"to\":\"/workspace/a.txt\"}");

        files.remove("/workspace/d", true);
        assertThat(server.last().rawQuery()).isEqualTo("path=/workspace/d&recursive=true");
        files.remove("/workspace/a.txt");
        assertThat(server.last().rawQuery()).isEqualTo("path=/workspace/a.txt");
    }

    @Test
    void aRelativePathIsRefusedBeforeAnyRequest() {
        assertThatThrownBy(() -> files.read("workspace/a"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must be absolute");
    }
}
