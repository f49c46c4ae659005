package dev.airlock.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The training workload of the CLI's AOT caches (bin/aot.sh): the JVM that runs it records the
 * classes it loads and links, and the method profiles, so that the short commands that follow
 * start with them ready. For the {@code run} cache (the argument {@code run}, or none) it runs what a
 * user runs most: {@code airlock run} here (a sandbox of this host, its python), then
 * {@code airlock run --server} against a stand-in server on loopback that answers one run as a
 * server does, so that the client side of a run on a server (its HTTP, its JSON, its token) is in
 * the cache too. For the {@code client} cache, which only {@code run --server} starts from, that
 * second step alone: no sandbox, no engine, so the cache holds only what a call to a server loads.
 * Prints what each step exited with; exits with the first failure's status.
 */
public final class AotTraining {

    /** What the stand-in server answers, the shape of a server's {@code POST /v1/run}. */
    private static final String RUN_ANSWER = "{\"stdout\":\"42\\n\",\"stderr\":\"\",\"exitCode\":0,\"endReason\":\"exited\","
            + "\"timedOut\":false,\"oomKilled\":false,\"truncated\":false,\"durationMs\":1,\"message\":null,\"outputs\":[]}";

    private AotTraining() {
    }

    public static void main(String[] args) throws Exception {
        String kind = args.length == 0 ? "run" : args[0];
        if (!kind.equals("run") && !kind.equals("client")) {
            System.err.println("airlock aot training: unknown cache kind '" + kind + "': give run or client");
            System.exit(AirlockCli.EXIT_USAGE);
        }
        ProcessUmask.letSandboxesRead();
        int here = 0;
        if (kind.equals("run")) {
            here = AirlockCli.execute("run", "--lang", "python", "--code", "pass");
            System.err.println("airlock aot training: run exited " + here);
        }
        int onServer = runOnStandIn();
        System.err.println("airlock aot training: run --server exited " + onServer);
        System.exit(here != 0 ? here : onServer);
    }

    private static int runOnStandIn() throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("airlock-aot-training");
        Path token = dir.resolve("token");
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Files.writeString(token, "training-" + "0".repeat(32));
            Files.setPosixFilePermissions(token, PosixFilePermissions.fromString("rw-------"));
            Thread standIn = Thread.ofPlatform().daemon().start(() -> answerOneRun(server));
            int status = AirlockCli.execute("run", "--server", "--url", "http://127.0.0.1:" + server.getLocalPort(), "--token-file",
                    token.toString(), "--lang", "python", "--code", "print(42)", "--timeout", "10");
            standIn.join(10_000);
            return status;
        } finally {
            Files.deleteIfExists(token);
            Files.deleteIfExists(dir);
        }
    }

    private static void answerOneRun(ServerSocket server) {
        try (Socket s = server.accept()) {
            s.setSoTimeout(10_000);
            InputStream in = s.getInputStream();
            long length = 0;
            StringBuilder line = new StringBuilder();
            for (int c; (c = in.read()) >= 0; ) {   // the head, up to its empty line
                if (c != '\n') {
                    line.append((char) c);
                    continue;
                }
                String header = line.toString().strip();
                line.setLength(0);
                if (header.isEmpty()) {
                    break;
                }
                if (header.regionMatches(true, 0, "Content-Length:", 0, 15)) {
                    length = Long.parseLong(header.substring(15).strip());
                }
            }
            in.skipNBytes(length);
            byte[] body = RUN_ANSWER.getBytes(StandardCharsets.UTF_8);
            OutputStream out = s.getOutputStream();
            out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
        } catch (IOException e) {
            System.err.println("airlock aot training: the stand-in server failed: " + e);
        }
    }
}
