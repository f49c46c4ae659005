package dev.airlock.cli;

import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;

/** {@code airlock serve}: the main job. Runs until SIGINT or SIGTERM, then destroys every sandbox. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve the REST API on localhost; sandboxes live until destroyed, expired or the server stops.")
final class ServeCommand implements Callable<Integer> {

    @Option(names = "--host", paramLabel = "ADDR", description = "Address to bind (env AIRLOCK_HOST; default 127.0.0.1).")
    String host = System.getenv().getOrDefault("AIRLOCK_HOST", "127.0.0.1");

    @Option(names = "--port", paramLabel = "PORT", description = "TCP port (env AIRLOCK_PORT; default 7700; 0 = any free port).")
    int port = Integer.parseInt(System.getenv().getOrDefault("AIRLOCK_PORT", Integer.toString(ServerConfig.DEFAULT_PORT)));

    @Option(names = "--e2b-port", paramLabel = "PORT", description = "TCP port of the E2B-compatible door, for E2B's SDKs"
            + " (env AIRLOCK_E2B_PORT; default: the port after --port, 7701; any free port when --port is 0; 0 = no E2B door).")
    Integer e2bPort = System.getenv("AIRLOCK_E2B_PORT") == null ? null : Integer.valueOf(System.getenv("AIRLOCK_E2B_PORT"));

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Override
    public Integer call() throws Exception {
        ServerConfig config = service.config().withHost(host).withPort(port)
                .withE2bPort(e2bPort == null ? ServerConfig.E2B_AFTER_API : e2bPort);
        AirlockServer server = AirlockServer.start(config);
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "airlock-shutdown"));
        server.reapedAtStart().forEach(line -> System.err.println("airlock: reaped " + line));
        System.out.println("airlock: serving on " + server.uri() + (config.policyFile() == null
                ? " (token in " + config.dataDir().resolve("token") + ")"
                : " (policy " + config.policyFile() + ")"));
        if (server.e2bUri() != null) {
            System.out.println("airlock: E2B's SDKs: E2B_API_URL=" + server.e2bUri() + " (airlock e2b env prints what to export)");
        }
        System.out.flush();
        server.join();
        return 0;
    }
}
