package dev.airlock.cli;

import dev.airlock.oci.HostReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;

/** {@code airlock doctor}: what this host supports, and what isolation each driver gives here. */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Report what this host supports and which isolation each driver would give here.")
final class DoctorCommand implements Callable<Integer> {

    @Option(names = "--json", description = "Print the report as JSON.")
    boolean json;

    @Mixin
    EngineOptions engineOptions = new EngineOptions();

    @Override
    public Integer call() {
        HostReport report = HostReport.probe(engineOptions.driverConfig());
        System.out.println(json ? report.toJson() : report.toText());
        return report.defaultRuntimeWorks() ? 0 : AirlockCli.EXIT_UNAVAILABLE;
    }
}
