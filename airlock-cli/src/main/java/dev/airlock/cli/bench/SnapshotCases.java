package dev.airlock.cli.bench;

import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;

/**
 * Snapshots through a real server's REST API: taking one of a sandbox whose /workspace holds N MB,
 * restoring it (a fork of one), and forking ten (three with --quick); the baselines, measured in the same run, are a
 * host copy of the same N MB (what a snapshot or restore cannot beat: the bytes must move) and
 * creating ten empty sandboxes (what a fork adds to a create). Last, ten forks of a 100 MiB
 * /workspace (8 with --quick) with the files shared copy-on-write, against the same forks on the
 * copy path.
 */
public final class SnapshotCases {

    public static final String SECTION = "snapshots";

    private SnapshotCases() {
    }

    /** The sizes of /workspace measured, in MiB. */
    public static List<Integer> sizes(boolean quick) {
        return quick ? List.of(1) : List.of(10, 100);
    }

    /** How many sandboxes the fork case makes, of a snapshot of how many MiB. */
    public static int forkCount(boolean quick) {
        return quick ? 3 : 10;
    }

    public static int forkMiB(boolean quick) {
        return quick ? 1 : 10;
    }

    public static List<Stats> measure(Progress progress, OciDriverConfig driver, int runs, boolean quick) throws Exception {
        Sampler sampler = new Sampler(runs, 1, progress);
        List<Stats> stats = new ArrayList<>();
        Path dataDir = Files.createTempDirectory("airlock-bench");
        ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(2).withDriver(driver.toSettings());
        try (AirlockServer server = AirlockServer.start(config)) {
            BenchClient client = new BenchClient(server.uri(), server.token());
            for (int mb : sizes(quick)) {
                Path source = dataDir.resolve("host-" + mb);
                byte[] chunk = new byte[1 << 20];
                new Random(mb).nextBytes(chunk);
                try (var out = Files.newOutputStream(source)) {
                    for (int i = 0; i < mb; i++) {
                        out.write(chunk);
                    }
                }
                Path copy = dataDir.resolve("copy-" + mb);
                Stats host = sampler.measure("host: copy " + mb + " MiB (baseline)",
                        () -> Files.copy(source, copy, StandardCopyOption.REPLACE_EXISTING), () -> Files.deleteIfExists(copy));
                stats.add(host.in(SECTION));

                // room for the file in the sandbox and in each restored one
                String limits = "{\"disk\": \"" + (mb * 2 + 16) + "m\", \"memory\": \"" + (mb * 4 + 256) + "m\", \"fileSize\": \"" + (mb + 1) + "m\"}";
                String id = client.create("{\"limits\": " + limits + "}");
                client.exec(id, "sh", "-c", "head -c " + (mb << 20) + " /dev/urandom > /workspace/data");
                List<String> snapshots = new ArrayList<>();
                stats.add(sampler.measure("snapshot of " + mb + " MiB in /workspace", () -> snapshots.add(client.snapshot(id)))
                        .in(SECTION).relativeTo(host));
                String snap = snapshots.getLast();
                List<String> restored = new ArrayList<>();
                Sampler.Case clear = deleting(client, restored);
                stats.add(sampler.measure("restore " + mb + " MiB (fork of 1)", () -> restored.addAll(client.fork(snap, 1, limits)), clear)
                        .in(SECTION).relativeTo(host));
                clear.once();
                client.delete(id);
                for (String s : snapshots) {
                    client.deleteSnapshot(s);
                }
            }
            // ten from one 10 MiB snapshot, against ten empty creates
            int mb = forkMiB(quick);
            int n = forkCount(quick);
            String id = client.create("{\"limits\": {\"disk\": \"64m\"}}");
            client.exec(id, "sh", "-c", "head -c " + (mb << 20) + " /dev/urandom > /workspace/data");
            String snap = client.snapshot(id);
            client.delete(id);
            List<String> made = new ArrayList<>();
            Sampler.Case clear = deleting(client, made);
            Stats empty = sampler.measure("create " + n + " empty sandboxes (baseline)", () -> {
                for (int i = 0; i < n; i++) {
                    made.add(client.create());
                }
            }, clear);
            clear.once();
            stats.add(empty.in(SECTION));
            stats.add(sampler.measure("fork " + n + " of " + mb + " MiB", () -> made.addAll(client.fork(snap, n, "{}")), clear).in(SECTION).relativeTo(empty));
            clear.once();
            client.deleteSnapshot(snap);
            stats.addAll(copyOnWrite(sampler, client, quick));
        } finally {
            try (var files = Files.walk(dataDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return stats;
    }

    /** The /workspace size of the copy-on-write case, in MiB. */
    public static int cowMiB(boolean quick) {
        return quick ? 8 : 100;
    }

    /**
     * Forks of one snapshot with a large /workspace: where the tier shares the snapshot's files
     * copy-on-write (runc), against the copy path (each fork gets the files written through its
     * agent), forced for the baseline by the server's switch for this comparison; the ratio is
     * shared / copied. Under runsc both rows take the copy path.
     */
    private static List<Stats> copyOnWrite(Sampler sampler, BenchClient client, boolean quick) throws Exception {
        int mb = cowMiB(quick);
        int n = forkCount(quick);
        String limits = "{\"disk\": \"" + (mb * 2 + 16) + "m\", \"memory\": \"" + (mb * 2 + 256) + "m\", \"fileSize\": \"" + (mb + 1) + "m\"}";
        String id = client.create("{\"limits\": " + limits + "}");
        client.exec(id, "sh", "-c", "head -c " + (mb << 20) + " /dev/urandom > /workspace/data");
        String snap = client.snapshot(id);
        client.delete(id);
        List<String> made = new ArrayList<>();
        Sampler.Case clear = deleting(client, made);
        String copyProperty = "airlock.snapshot.copyWorkspace"; // SnapshotStore.COPY_WORKSPACE
        Stats copied;
        System.setProperty(copyProperty, "true");
        try {
            copied = sampler.measure("fork " + n + " of " + mb + " MiB, files copied (baseline)",
                    () -> made.addAll(client.fork(snap, n, limits)), clear);
            clear.once();
        } finally {
            System.clearProperty(copyProperty);
        }
        Stats shared = sampler.measure("fork " + n + " of " + mb + " MiB, files shared copy-on-write",
                () -> made.addAll(client.fork(snap, n, limits)), clear);
        clear.once();
        client.deleteSnapshot(snap);
        return List.of(copied.in(SECTION), shared.in(SECTION).relativeTo(copied));
    }

    /** Deletes the sandboxes in {@code ids}, forgets them, and waits for the warm pool to be full again. */
    private static Sampler.Case deleting(BenchClient client, List<String> ids) {
        return () -> {
            for (String id : ids) {
                client.delete(id);
            }
            ids.clear();
            client.awaitPoolReady();
        };
    }
}
