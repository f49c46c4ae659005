package dev.airlock.cli;

import dev.airlock.server.e2b.E2bDoor;
import dev.airlock.server.policy.TokenFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code airlock e2b}: what E2B's SDKs need to reach this server's E2B door. */
@Command(name = "e2b", mixinStandardHelpOptions = true,
        description = "The E2B-compatible door: point E2B's SDKs at this server (docs/e2b.md).",
        subcommands = E2bCommand.Env.class)
final class E2bCommand {

    @Command(name = "env", mixinStandardHelpOptions = true,
            description = "Print the three environment variables E2B's SDKs read (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY), as shell"
                    + " exports: eval \"$(airlock e2b env)\".")
    static final class Env implements Callable<Integer> {

        @Option(names = "--url", paramLabel = "URL", description = "The E2B door (env AIRLOCK_E2B_URL; default http://127.0.0.1:7701).")
        String url = System.getenv().getOrDefault("AIRLOCK_E2B_URL", "http://127.0.0.1:7701");

        @Option(names = "--token-file", paramLabel = "FILE", description = "File holding the client's Airlock token (env AIRLOCK_TOKEN_FILE;"
                + " default: the data directory's token, /var/lib/airlock/token or $AIRLOCK_DATA_DIR/token).")
        Path tokenFile = ServerConnection.defaultTokenFile();

        @Override
        public Integer call() {
            String key = E2bDoor.apiKey(TokenFile.read(tokenFile));
            String base = url.replaceAll("/+$", "");
            System.out.println("export E2B_API_URL=" + base);
            System.out.println("export E2B_SANDBOX_URL=" + base);
            System.out.println("export E2B_API_KEY=" + key);
            return 0;
        }
    }
}
