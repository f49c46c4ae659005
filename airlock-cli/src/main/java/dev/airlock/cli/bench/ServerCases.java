package dev.airlock.cli.bench;

import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import static dev.airlock.cli.bench.Baselines.PYTHON;

/**
 * The same requests through the REST API of a real server on a loopback socket, and through its E2B door. First, for a
 * while, the server creates, runs and deletes sandboxes unmeasured ({@link Sampler#warmUpSeconds}): the figures are a
 * long-running server's, not those of a JVM (the bench's client is in it too) still compiling the request paths.
 */
public final class ServerCases {

    private ServerCases() {
    }

    public static List<Stats> measure(Sampler sampler, OciDriverConfig driver, int warmUpSeconds) throws Exception {
        List<Stats> stats = new ArrayList<>();
        Path dataDir = Files.createTempDirectory("airlock-bench");
        ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(1).withDriver(driver.toSettings());
        try (AirlockServer server = AirlockServer.start(config)) {
            BenchClient client = new BenchClient(server.uri(), server.token());
            E2bBenchClient e2b = new E2bBenchClient(server.e2bUri(), dev.airlock.server.e2b.E2bDoor.apiKey(server.token()));
            Sampler.warmUp(sampler.progress(), "server", warmUpSeconds, () -> {
                client.health();
                String one = client.create();
                client.exec(one, PYTHON, "-c", "pass");
                client.delete(one);
                E2bBenchClient.Created door = e2b.create(300);
                e2b.run(door, "true");
                e2b.kill(door);
            });
            // the floor of every REST case: the round trip of the benchmark's client (PlainHttp) and the loopback; then the same
            // through the JDK's HttpClient, for the difference a client library's threads make
            Stats floor = sampler.measure("server: GET /health round trip (the floor of a REST case)", client::health);
            stats.add(floor);
            HttpRequest health = HttpRequest.newBuilder(server.uri().resolve("/health")).build();
            try (HttpClient jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
                stats.add(sampler.measure("server: GET /health through the JDK's HttpClient", () -> {
                    if (jdk.send(health, HttpResponse.BodyHandlers.ofString()).statusCode() != 200) {
                        throw new IllegalStateException("GET /health did not answer 200");
                    }
                }).relativeTo(floor));
            }
            Sampler.Case quiet = client::awaitPoolReady;
            List<String> created = new ArrayList<>();
            stats.add(sampler.measure("server: create from warm pool (POST /v1/sandboxes)", () -> created.add(client.create()), () -> {
                for (String id : created) {
                    client.delete(id);
                }
                created.clear();
                quiet.once();
            }));
            for (String id : created) {
                client.delete(id);
            }
            String id = client.create();
            stats.add(sampler.measure("server: exec true (POST .../exec)", () -> client.exec(id, "true")));
            stats.add(sampler.measure("server: exec python3 -c pass", () -> client.exec(id, PYTHON, "-c", "pass")));
            client.delete(id);
            stats.add(sampler.measure("server: one-shot python3 -c pass (create, exec, delete)", () -> {
                String one = client.create();
                client.exec(one, PYTHON, "-c", "pass");
                client.delete(one);
            }, quiet));
            // the E2B door against the same requests over REST: a sandbox of the same spec (E2B's 300 s timeout, its template
            // label), its first command, its end; the door's ratio is to the REST case
            Stats rest = sampler.measure("server: time to first command over REST (create, exec true, delete)", () -> {
                String one = client.create("{\"ttlSeconds\": 300, \"labels\": {\"e2b.template\": \"base\"}}");
                client.exec(one, "true");
                client.delete(one);
            }, quiet);
            stats.add(rest);
            stats.add(sampler.measure("server: time to first command through the E2B door (create, process Start true, kill)", () -> {
                E2bBenchClient.Created one = e2b.create(300);
                e2b.run(one, "true");
                e2b.kill(one);
            }, quiet).relativeTo(rest));
            quiet.once();   // no pool refill cut short by the server's close()
        } finally {
            try (var files = Files.walk(dataDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return stats;
    }
}
