package dev.airlock.cli.bench;

import dev.airlock.oci.OciDriverConfig;
import dev.airlock.server.AirlockServer;
import dev.airlock.server.config.ServerConfig;
import tools.jackson.databind.JsonNode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import static dev.airlock.cli.bench.Baselines.PYTHON;

/**
 * Interpreter contexts through the REST API of a real server: creating a context (its IPython
 * kernel started and answering), a trivial cell and a chart cell in a live context. Each is
 * compared with the same work done the way one would without a context, in the same sandbox:
 * {@code python3 -c} of the same code (for the context, importing what the kernel needs), an exec
 * that starts a fresh Python each time.
 */
public final class InterpreterCases {

    public static final String SECTION = "interpreter";
    /** What a kernel imports before it answers: the fair floor of a context's creation. */
    static final String KERNEL_IMPORTS = "import ipykernel.kernelapp, jupyter_client";
    static final String TRIVIAL = "1+1";
    /** A small chart: the context returns it as a PNG (inline backend); the one-shot writes the same PNG to memory. */
    static final String CHART = "import matplotlib.pyplot as plt\n"
            + "fig = plt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3], [1, 4, 9])\n";
    /**
     * What the interpreter's bridge does before a context's kernel imports matplotlib (interpreter.py):
     * Debian's matplotlib reads /etc/matplotlibrc, which the system image lacks, so it is pointed at
     * the package's own copy. The one-shots that import matplotlib do the same, to be comparable.
     */
    static final String MATPLOTLIB_RC = "import os\nif not os.path.exists('/etc/matplotlibrc')"
            + " and os.path.exists('/usr/share/matplotlib/mpl-data/matplotlibrc'):\n"
            + "    os.environ.setdefault('MATPLOTLIBRC', '/usr/share/matplotlib/mpl-data/matplotlibrc')\n";
    static final String CHART_SAVED = MATPLOTLIB_RC + CHART + "import io\nfig.savefig(io.BytesIO(), format='png')\n";

    private InterpreterCases() {
    }

    /**
     * The interpreter rows, in sandboxes of {@code image} (which must have python3-ipykernel,
     * -jupyter-client and -matplotlib, such as {@code airlock image build python-data}; {@code
     * system} when the host has them); none, with a note saying why, when the image lacks them.
     */
    public static List<Stats> measure(Sampler sampler, OciDriverConfig driver, String image, List<String> notes) throws Exception {
        List<Stats> stats = new ArrayList<>();
        Path dataDir = Files.createTempDirectory("airlock-bench");
        Files.writeString(dataDir.resolve("policy.yaml"), """
                profiles:
                  default:
                    images: [%s]
                clients:
                  local: {tokenFile: token, profiles: [default], allow: ["*"]}
                """.formatted(image.equals("system") ? "system" : "system, " + image));
        ServerConfig config = ServerConfig.defaults().withPort(0).withDataDir(dataDir).withPoolSize(0).withDriver(driver.toSettings())
                .withPolicyFile(dataDir.resolve("policy.yaml"));
        try (AirlockServer server = AirlockServer.start(config)) {
            BenchClient client = new BenchClient(server.uri(), server.token());
            String sandbox = client.create(image, 3600);
            try {
                try {
                    client.exec(sandbox, PYTHON, "-c", MATPLOTLIB_RC + KERNEL_IMPORTS + "; import matplotlib");
                } catch (IllegalStateException e) {
                    notes.add("interpreter: not measured: image " + image + " lacks python3-ipykernel, -jupyter-client or -matplotlib"
                            + " (airlock image build python-data, then airlock bench --interpreter-image python-data): " + e.getMessage());
                    return stats;
                }
                notes.add("interpreter: measured in a sandbox of image " + image);
                Stats importsOnly = sampler.measure("one-shot: python3 -c 'import ipykernel, jupyter_client'",
                        () -> client.exec(sandbox, PYTHON, "-c", KERNEL_IMPORTS));
                List<String> contexts = new ArrayList<>();
                Stats create = sampler.measure("context create (kernel ready)",
                        () -> contexts.add(client.createContext(sandbox)), () -> {
                            for (String c : contexts) {
                                client.deleteContext(sandbox, c);
                            }
                            contexts.clear();
                        });
                for (String c : contexts) {
                    client.deleteContext(sandbox, c);
                }
                String context = client.createContext(sandbox);
                Stats trivialExec = sampler.measure("one-shot: python3 -c '1+1'",
                        () -> client.exec(sandbox, PYTHON, "-c", TRIVIAL));
                Stats trivial = sampler.measure("cell 1+1 in a live context", () -> client.runCell(sandbox, context, TRIVIAL));
                Stats chartExec = sampler.measure("one-shot: python3 -c '<plot, savefig png>'",
                        () -> client.exec(sandbox, PYTHON, "-c", CHART_SAVED));
                Stats chart = sampler.measure("cell: a small matplotlib plot, PNG back", () -> {
                    JsonNode r = client.runCell(sandbox, context, CHART);
                    if (!r.toString().contains("image/png")) {
                        throw new IllegalStateException("the chart cell returned no PNG: " + r);
                    }
                });
                stats.add(importsOnly.in(SECTION));
                stats.add(create.relativeTo(importsOnly).in(SECTION));
                stats.add(trivialExec.in(SECTION));
                stats.add(trivial.relativeTo(trivialExec).in(SECTION));
                stats.add(chartExec.in(SECTION));
                stats.add(chart.relativeTo(chartExec).in(SECTION));
            } finally {
                client.delete(sandbox);
            }
        } finally {
            try (var files = Files.walk(dataDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        return stats;
    }
}
