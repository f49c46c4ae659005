package dev.airlock.cli;

import picocli.CommandLine.Command;

import java.util.concurrent.Callable;

/** {@code airlock bench}: placeholder until the benchmark lands. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Measure Airlock against bare commands on this host.")
final class BenchCommand implements Callable<Integer> {
    @Override
    public Integer call() {
        return 0;
    }
}
