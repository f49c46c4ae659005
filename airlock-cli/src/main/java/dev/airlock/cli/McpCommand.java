package dev.airlock.cli;

import dev.airlock.server.SandboxRuntime;
import dev.airlock.server.ServerConfig;
import dev.airlock.server.mcp.McpStdioServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code airlock mcp}: an MCP server on stdin and stdout, for a client that starts it as a
 * subprocess (Claude Desktop, Claude Code, IDEs). No HTTP, no token: whoever can start the
 * process already is the user. Only protocol goes to stdout; logs go to stderr.
 */
@Command(name = "mcp", mixinStandardHelpOptions = true,
        description = "Serve MCP over stdio: tools to run code in sandboxes. Sandboxes end with the session (when stdin closes).")
final class McpCommand implements Callable<Integer> {

    @Option(names = "--data-dir", paramLabel = "DIR", description = "State database (env AIRLOCK_DATA_DIR; default /var/lib/airlock).")
    Path dataDir = Path.of(System.getenv().getOrDefault("AIRLOCK_DATA_DIR", "/var/lib/airlock"));

    @Option(names = "--pool-size", paramLabel = "N", description = "Warm sandboxes kept ready (default 2).")
    int poolSize = 2;

    @Option(names = "--max-sandboxes", paramLabel = "N", description = "Live sandboxes at once (default 200).")
    int maxSandboxes = 200;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Override
    public Integer call() throws Exception {
        // stdout belongs to the protocol: anything else that prints goes to stderr instead.
        OutputStream protocol = new FileOutputStream(FileDescriptor.out);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        ServerConfig config = ServerConfig.defaults().withDataDir(dataDir).withDriver(engineOptions.driverConfig())
                .withPoolSize(poolSize).withMaxSandboxes(maxSandboxes);
        SandboxRuntime runtime = SandboxRuntime.open(config);
        Runtime.getRuntime().addShutdownHook(new Thread(runtime::close, "airlock-shutdown"));
        runtime.service().reapedAtStart().forEach(line -> System.err.println("airlock: reaped " + line));
        try {
            McpStdioServer.serve(runtime.service(), config, System.in, protocol);
        } finally {
            runtime.close();
        }
        return 0;
    }
}
