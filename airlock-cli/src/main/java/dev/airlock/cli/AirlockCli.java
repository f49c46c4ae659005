package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code bin/airlock}: the operator's and the developer's door to Airlock. */
@Command(name = "airlock",
        mixinStandardHelpOptions = true,
        version = "airlock 0.1.0",
        description = "Runs untrusted code in disposable, isolated sandboxes.",
        subcommands = {ServeCommand.class, McpCommand.class, RunCommand.class, DoctorCommand.class, VerifyCommand.class, BenchCommand.class, LeaksCommand.class, AuditCommand.class, PolicyCommand.class, ApprovalsCommand.class, ImageCommand.class, CommandLine.HelpCommand.class})
public final class AirlockCli {

    /** Exit status for a request Airlock refused as invalid. */
    static final int EXIT_USAGE = 2;
    /** Exit status when this host cannot provide what was asked (runtime missing...). */
    static final int EXIT_UNAVAILABLE = 3;
    /** Exit status for an internal failure. */
    static final int EXIT_INTERNAL = 4;

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /**
     * Runs the CLI in this JVM and returns its exit status instead of exiting: {@link #main} without
     * {@code System.exit}, for callers that embed it (the integration tests of airlock-it run
     * {@code airlock approvals} this way).
     */
    public static int execute(String... args) {
        CommandLine cli = new CommandLine(new AirlockCli());
        cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof AirlockException ae) {
                cmd.getErr().println("airlock: " + ae.getMessage());
                return switch (ae.kind()) {
                    case INVALID_ARGUMENT, NOT_FOUND, CONFLICT, PERMISSION_DENIED, LIMIT_EXCEEDED, TOO_LARGE -> EXIT_USAGE;
                    case UNAVAILABLE -> EXIT_UNAVAILABLE;
                    case INTERNAL -> EXIT_INTERNAL;
                };
            }
            cmd.getErr().println("airlock: internal error: " + e);
            return EXIT_INTERNAL;
        });
        return cli.execute(args);
    }
}
