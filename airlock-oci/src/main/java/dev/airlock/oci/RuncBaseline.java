package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.EngineInstance;
import dev.airlock.core.Limits;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * A baseline for benchmarks: the runtime's own {@code run} of a command in the very bundle
 * Airlock would use (same image, mounts, namespaces, seccomp and limits), with no agent, no pool
 * and no Java in the way. What Airlock adds on top is measured against this.
 */
public final class RuncBaseline implements AutoCloseable {

    private final OciRuntime runtime;
    private final EngineInstance state;
    private final Path bundle;
    private final UidSlots uidSlots;
    private final long hostIdBase;
    private int runs;

    public RuncBaseline(OciDriverConfig config, List<String> command) {
        // the baseline is a plain OCI runtime's own run: runc's when the sandboxes are Airlock's own runtime's
        this.runtime = OciRuntime.find(Launcher.NAME.equals(config.runtime()) ? "runc" : config.runtime());
        this.state = StateDirectory.create(config.stateRoot());
        this.uidSlots = new UidSlots(config.stateRoot(), config.hostIdBase());
        this.hostIdBase = uidSlots.allocate("al-" + state.name() + "-baseline");
        try {
            SystemImage image = SystemImage.build(Path.of("/"), StateDirectory.imageRoot(state));
            bundle = state.sandboxDir("baseline");
            runtime.createSandboxDirectory(bundle);
            Path runDir = bundle.resolve("run");
            StateDirectory.createTraversable(runDir);
            runtime.writeBundle(bundle, runtime.adapt(OciConfig.config(image, Limits.DEFAULTS, command,
                    Map.of("PATH", "/usr/bin:/bin"), runDir, Cgroups.pathOf("al-" + state.name() + "-baseline"),
                    hostIdBase, Seccomp.defaultProfile())));
        } catch (IOException | RuntimeException e) {
            uidSlots.release(hostIdBase);
            state.close();
            throw e instanceof RuntimeException re ? re : AirlockException.internal("cannot prepare the baseline bundle", e);
        }
    }

    /** {@code runtime run} in the foreground, then {@code runtime delete}: one cold container. */
    public void runOnce() {
        String id = "al-" + state.name() + "-" + String.format("%016x", runs++);
        List<String> command = runtime.command("run", "--bundle", bundle.toString(), id);
        try {
            Process p = new ProcessBuilder(command).redirectInput(new File("/dev/null"))
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
            int exit = p.waitFor();
            runtime.delete(id);
            if (exit != 0) {
                throw AirlockException.internal(runtime.name() + " run exited with " + exit, null);
            }
        } catch (IOException e) {
            throw AirlockException.unavailable("cannot run " + runtime.binary() + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            runtime.delete(id);
            throw new AirlockException(AirlockException.Kind.INTERNAL, "interrupted");
        }
    }

    @Override
    public void close() {
        uidSlots.release(hostIdBase);
        state.close();
    }
}
