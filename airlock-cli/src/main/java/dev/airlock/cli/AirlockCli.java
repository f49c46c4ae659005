package dev.airlock.cli;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Trace;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.util.List;

/** {@code bin/airlock}: the operator's and the developer's door to Airlock. */
@Command(name = "airlock",
        mixinStandardHelpOptions = true,
        version = "airlock 0.1.0",
        description = "Runs untrusted code in disposable, isolated sandboxes.")
public final class AirlockCli {

    /** Exit status for a request Airlock refused as invalid. */
    static final int EXIT_USAGE = 2;
    /** Exit status when this host cannot provide what was asked (runtime missing...). */
    static final int EXIT_UNAVAILABLE = 3;
    /** Exit status for an internal failure. */
    static final int EXIT_INTERNAL = 4;

    /**
     * The subcommands, in the order help lists them. Picocli builds a command's model by reflection
     * over its options and mixins, a good part of a one-shot's start: so only the subcommand that
     * the command line names is registered, and all of them when it names none ({@code --help},
     * {@code help}, a typo), so that help and error messages list them all.
     */
    static final List<Class<?>> SUBCOMMANDS = List.of(ServeCommand.class, McpCommand.class, RunCommand.class, DoctorCommand.class,
            VerifyCommand.class, BenchCommand.class, LeaksCommand.class, AuditCommand.class, PolicyCommand.class,
            ApprovalsCommand.class, ClusterCommand.class, ImageCommand.class, E2bCommand.class, CommandLine.HelpCommand.class);

    static {
        // Picocli's default factory looks for Groovy's Closure class once per JVM unless told not to: a class that is not
        // there, so the lookup opens every jar of the class path (about 50 ms). Airlock has no Groovy. (A command that starts
        // a process opens them all there anyway: JDK 25's ProcessBuilder looks up its System.Logger, a service lookup.)
        if (System.getProperty("picocli.disable.closures") == null) {
            System.setProperty("picocli.disable.closures", "true");
        }
    }

    public static void main(String[] args) {
        Trace.mark("main");
        ProcessUmask.letSandboxesRead();
        int status = execute(args);
        Trace.mark("exit");
        System.exit(status);
    }

    /**
     * Runs the CLI in this JVM and returns its exit status instead of exiting: {@link #main} without
     * {@code System.exit}, for callers that embed it (the integration tests of airlock-it run
     * {@code airlock approvals} this way).
     */
    public static int execute(String... args) {
        CommandLine cli = commandLine(args.length == 0 ? null : args[0]);
        Trace.mark("command line model built");
        cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof AirlockException ae) {
                cmd.getErr().println("airlock: " + ae.getMessage());
                return switch (ae.kind()) {
                    case INVALID_ARGUMENT, NOT_FOUND, GONE, CONFLICT, PERMISSION_DENIED, LIMIT_EXCEEDED, TOO_LARGE -> EXIT_USAGE;
                    case UNAVAILABLE -> EXIT_UNAVAILABLE;
                    case INTERNAL -> EXIT_INTERNAL;
                };
            }
            cmd.getErr().println("airlock: internal error: " + e);
            return EXIT_INTERNAL;
        });
        return cli.execute(args);
    }

    /** The command line with the subcommand {@code first} names, or with all of them when it names none ({@link #SUBCOMMANDS}). */
    static CommandLine commandLine(String first) {
        CommandLine cli = new CommandLine(new AirlockCli());
        Class<?> named = SUBCOMMANDS.stream().filter(c -> !c.equals(CommandLine.HelpCommand.class)
                && c.getAnnotation(Command.class).name().equals(first)).findFirst().orElse(null);
        for (Class<?> subcommand : named == null ? SUBCOMMANDS : List.of(named)) {
            cli.addSubcommand(subcommand);
        }
        return cli;
    }
}
