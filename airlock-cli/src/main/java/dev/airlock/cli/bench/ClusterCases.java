package dev.airlock.cli.bench;

import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ClusterSettings;
import dev.airlock.server.config.ServerConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A cluster on this host (docs/cluster.md): nodes of their own ports, data and state directories,
 * on the PostgreSQL database {@code bench --cluster} names. Creates per second and the time to a
 * first command through one node while it is the only one, then through the same node with two
 * more (ratio: to one node); an exec into a sandbox the node asked holds, and into one another
 * node holds, forwarded (ratio: to the local one).
 */
public final class ClusterCases {

    public static final String SECTION = "cluster";
    private static final String[] NAMES = {"bench-a", "bench-b", "bench-c"};

    private ClusterCases() {
    }

    public static String method(int creates) {
        return String.format("nodes on this host on the database --cluster names, no pool; create rate: %d creates one after the other"
                + " through node bench-a, then deleted, median of 3 rounds; latency cases: the latency method, every request through bench-a;"
                + " first command: create, exec true, delete", creates);
    }

    public static List<Stats> measure(Sampler sampler, OciDriverConfig driver, String url, Path secret, int creates) throws Exception {
        List<Stats> stats = new ArrayList<>();
        List<AirlockServer> nodes = new ArrayList<>();
        List<Path> dirs = new ArrayList<>();
        try {
            nodes.add(node(driver, url, secret, NAMES[0], dirs));
            BenchClient a = new BenchClient(nodes.getFirst().uri(), nodes.getFirst().token());
            Stats oneRate = rate(sampler.progress(), a, "cluster: creates/s, 1 node", creates);
            Stats oneFirst = sampler.measure("cluster: time to first command, 1 node",
                    () -> firstCommand(a)).in(SECTION);
            nodes.add(node(driver, url, secret, NAMES[1], dirs));
            nodes.add(node(driver, url, secret, NAMES[2], dirs));
            stats.add(oneRate);
            stats.add(rate(sampler.progress(), a, "cluster: creates/s, 3 nodes", creates).relativeTo(oneRate));
            stats.add(oneFirst);
            stats.add(sampler.measure("cluster: time to first command, 3 nodes", () -> firstCommand(a)).in(SECTION)
                    .relativeTo(oneFirst));
            String local = null;
            String remote = null;
            List<String> extra = new ArrayList<>();
            while (local == null || remote == null) {
                String[] placed = a.createPlaced();
                if (placed[1].equals(NAMES[0]) && local == null) {
                    local = placed[0];
                } else if (!placed[1].equals(NAMES[0]) && remote == null) {
                    remote = placed[0];
                } else {
                    extra.add(placed[0]);
                }
            }
            for (String id : extra) {
                a.delete(id);
            }
            String here = local;
            String there = remote;
            Stats localExec = sampler.measure("cluster: exec true, sandbox on the node asked", () -> a.exec(here, "true")).in(SECTION);
            stats.add(localExec);
            stats.add(sampler.measure("cluster: exec true, sandbox on another (forwarded)", () -> a.exec(there, "true")).in(SECTION)
                    .relativeTo(localExec));
            a.delete(local);
            a.delete(remote);
        } finally {
            for (AirlockServer n : nodes.reversed()) {
                n.close();
            }
            dirs.forEach(dev.airlock.core.HostFiles::deleteTree);
        }
        return stats;
    }

    private static AirlockServer node(OciDriverConfig driver, String url, Path secret, String name, List<Path> dirs) throws Exception {
        Path dir = Files.createTempDirectory("airlock-bench-" + name);
        dirs.add(dir);
        return AirlockServer.start(ServerConfig.defaults().withPort(0).withDataDir(dir).withPoolSize(0).withE2bPort(ServerConfig.E2B_OFF)
                .withDriver(driver.toSettings()).withCluster(new ClusterSettings(url, name, secret, ClusterSettings.DEFAULT_LEASE, 0)));
    }

    private static void firstCommand(BenchClient c) throws Exception {
        String id = c.create();
        c.exec(id, "true");
        c.delete(id);
    }

    /** Creates per second through {@code c}: {@code count} one after the other, timed, then deleted; median of 3 rounds. */
    private static Stats rate(Progress progress, BenchClient c, String name, int count) throws Exception {
        double[] rates = new double[3];
        progress.begin(name, rates.length);
        for (int round = 0; round < rates.length; round++) {
            List<String> ids = new ArrayList<>();
            long start = System.nanoTime();
            for (int i = 0; i < count; i++) {
                ids.add(c.create());
            }
            rates[round] = count / (Duration.ofNanos(System.nanoTime() - start).toMillis() / 1000.0);
            for (String id : ids) {
                c.delete(id);
            }
            progress.step();
        }
        progress.end();
        return Stats.of(SECTION, name, "/s", rates);
    }
}
