package dev.airlock.cli;

import dev.airlock.server.SandboxRuntime;
import dev.airlock.server.config.ServerConfig;
import dev.airlock.server.mcp.McpStdioServer;
import dev.airlock.server.policy.Client;
import dev.airlock.server.policy.Policy;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.util.concurrent.Callable;

/**
 * {@code airlock mcp}: an MCP server on stdin and stdout, for a client that starts it as a
 * subprocess (Claude Desktop, Claude Code, IDEs). No HTTP, no token: whoever can start the
 * process already is the user; {@code --client} says which policy client the session acts as. Only protocol goes to stdout; logs go to stderr.
 */
@Command(name = "mcp", mixinStandardHelpOptions = true,
        description = "Serve MCP over stdio: tools to run code in sandboxes. Sandboxes end with the session (when stdin closes).")
final class McpCommand implements Callable<Integer> {

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Option(names = "--client", paramLabel = "NAME", description = "The policy client this session acts as (env AIRLOCK_CLIENT;"
            + " default: local, the built-in policy's only client).")
    String client = System.getenv().getOrDefault("AIRLOCK_CLIENT", Policy.LOCAL_CLIENT);

    @Override
    public Integer call() throws Exception {
        // stdout belongs to the protocol: anything else that prints goes to stderr instead.
        OutputStream protocol = new FileOutputStream(FileDescriptor.out);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        ServerConfig config = service.config();
        SandboxRuntime runtime = SandboxRuntime.open(config);
        Client acting;
        try {
            acting = runtime.service().policy().client(client);
        } catch (RuntimeException e) {
            runtime.close();
            throw e;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(runtime::close, "airlock-shutdown"));
        runtime.service().reapedAtStart().forEach(line -> System.err.println("airlock: reaped " + line));
        try {
            McpStdioServer.serve(runtime.service(), config, acting, System.in, protocol);
        } finally {
            runtime.close();
        }
        return 0;
    }
}
