package dev.airlock.microvm;

import java.nio.file.Path;

/**
 * A driver on another state root in a JVM of its own, as another server or verify's scenario
 * engines are: it reaps what it takes for orphans and prints each line. (In the test's own JVM
 * every instance of the process counts as alive, so a reaper there could never show the mistake.)
 */
public final class ReapElsewhere {

    private ReapElsewhere() {
    }

    public static void main(String[] args) {
        try (MicroVmDriver driver = new MicroVmDriver(MicroVmDriverConfig.defaults().withStateRoot(Path.of(args[0])))) {
            driver.reapOrphans().forEach(System.out::println);
        }
    }
}
