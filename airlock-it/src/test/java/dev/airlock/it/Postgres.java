package dev.airlock.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real PostgreSQL for a test (Debian's {@code postgresql} package, which bin/test installs): a
 * throwaway data directory made by initdb, the server started as the {@code postgres} user on a
 * free loopback port, stopped and removed on close. Nothing of the host's own clusters is touched.
 */
final class Postgres implements AutoCloseable {

    private static final Duration READY = Duration.ofSeconds(60);

    private final Path dir;
    private final Path bin;
    private final int port;
    private Process server;

    private Postgres(Path dir, Path bin, int port) {
        this.dir = dir;
        this.bin = bin;
        this.port = port;
    }

    static Postgres start() {
        Path bin = binDirectory();
        try {
            Path dir = Files.createTempDirectory("airlock-pg-");
            UserPrincipalLookupService users = dir.getFileSystem().getUserPrincipalLookupService();
            Files.setOwner(dir, users.lookupPrincipalByName("postgres"));
            Postgres pg = new Postgres(dir, bin, freePort());
            try {
                pg.run(List.of(bin.resolve("initdb").toString(), "-D", pg.data().toString(), "-A", "trust", "-U", "airlock", "-E", "UTF8",
                        "--no-sync"), Duration.ofSeconds(120));
                pg.startServer();
                return pg;
            } catch (RuntimeException | Error e) {
                pg.close();
                throw e;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The newest PostgreSQL's bin directory under /usr/lib/postgresql. */
    private static Path binDirectory() {
        try (Stream<Path> versions = Files.list(Path.of("/usr/lib/postgresql"))) {
            return versions.map(v -> v.resolve("bin")).filter(b -> Files.isExecutable(b.resolve("postgres")))
                    .max(java.util.Comparator.comparing(p -> Integer.parseInt(p.getParent().getFileName().toString().replaceAll("\\D", "0"))))
                    .orElseThrow(() -> new AssertionError("no PostgreSQL under /usr/lib/postgresql: bin/test installs the postgresql package"));
        } catch (IOException e) {
            throw new AssertionError("no PostgreSQL under /usr/lib/postgresql (" + e.getMessage() + "): bin/test installs the postgresql package");
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private Path data() {
        return dir.resolve("data");
    }

    /** The server as the postgres user (PostgreSQL refuses to run as root); setpriv execs, so the process is the server's. */
    private ProcessBuilder asPostgres(List<String> command) {
        List<String> all = new java.util.ArrayList<>(List.of("setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"));
        all.addAll(command);
        return new ProcessBuilder(all).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("log").toFile()));
    }

    private void run(List<String> command, Duration limit) {
        try {
            Process p = asPostgres(command).start();
            if (!p.waitFor(limit.toSeconds(), TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(command.getFirst() + " did not end within " + limit + ": " + log());
            }
            if (p.exitValue() != 0) {
                throw new AssertionError(command + " failed (" + p.exitValue() + "): " + log());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** Starts the server (again) and waits until it takes connections. */
    void startServer() {
        try {
            server = asPostgres(List.of(bin.resolve("postgres").toString(), "-D", data().toString(), "-p", Integer.toString(port),
                    "-k", dir.toString(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=50")).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        long end = System.nanoTime() + READY.toNanos();
        while (true) {
            try (Connection c = DriverManager.getConnection("jdbc:" + url())) {
                return;
            } catch (SQLException e) {
                if (!server.isAlive() || System.nanoTime() > end) {
                    throw new AssertionError("PostgreSQL did not start on port " + port + ": " + e.getMessage() + "; its log: " + log());
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(ie);
                }
            }
        }
    }

    /** Stops the server with a fast shutdown (clients cut, everything committed kept). */
    void stopServer() {
        if (server == null || !server.isAlive()) {
            return;
        }
        try {
            new ProcessBuilder("kill", "-INT", Long.toString(server.pid())).start().waitFor();
            if (!server.waitFor(30, TimeUnit.SECONDS)) {
                server.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The database's URL as {@code --cluster} takes it. */
    String url() {
        return "postgresql://127.0.0.1:" + port + "/postgres?user=airlock";
    }

    private String log() {
        try {
            String s = Files.readString(dir.resolve("log"));
            return s.length() > 4000 ? s.substring(s.length() - 4000) : s;
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    @Override
    public void close() {
        stopServer();
        dev.airlock.core.HostFiles.deleteTree(dir);
    }
}
