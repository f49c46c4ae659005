package dev.airlock.cli;

import dev.airlock.server.SandboxRuntime;
import dev.airlock.server.ServerConfig;
import dev.airlock.server.mcp.McpStdioServer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.util.concurrent.Callable;

/**
 * {@code airlock mcp}: an MCP server on stdin and stdout, for a client that starts it as a
 * subprocess (Claude Desktop, Claude Code, IDEs). No HTTP, no token: whoever can start the
 * process already is the user. Only protocol goes to stdout; logs go to stderr.
 */
@Command(name = "mcp", mixinStandardHelpOptions = true,
        description = "Serve MCP over stdio: tools to run code in sandboxes. Sandboxes end with the session (when stdin closes).")
final class McpCommand implements Callable<Integer> {

    @Mixin
    ServiceOptions service = new ServiceOptions();

    @Override
    public Integer call() throws Exception {
        // stdout belongs to the protocol: anything else that prints goes to stderr instead.
        OutputStream protocol = new FileOutputStream(FileDescriptor.out);
        System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        ServerConfig config = service.config();
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
