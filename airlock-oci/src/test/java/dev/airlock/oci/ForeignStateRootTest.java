package dev.airlock.oci;

import dev.airlock.core.Engine;
import dev.airlock.core.ExecRequest;
import dev.airlock.core.Sandbox;
import dev.airlock.core.SandboxSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runtime state and cgroups are host-wide, state roots are not: an engine starting on one state
 * root (as verify's scenarios and tests do) must not take the instance of another process on
 * another state root for dead and reap its running sandboxes. The other engine runs in a child
 * JVM, since instances of this JVM are known alive without any lock.
 */
class ForeignStateRootTest {

    @Test
    void anEngineOnAnotherStateRootDoesNotReapALiveEnginesSandboxes(@TempDir Path tmp) throws Exception {
        Path childRoot = Files.createDirectory(tmp.resolve("c"));
        Path ownRoot = Files.createDirectory(tmp.resolve("o"));
        for (Path p : new Path[] {tmp, childRoot, ownRoot}) {
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx--x--x"));
        }
        Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                ForeignStateRootTest.class.getName(), childRoot.toString()).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            String id = null;
            for (String line; (line = out.readLine()) != null; ) {
                if (line.startsWith("READY ")) {
                    id = line.substring(6);
                    break;
                }
            }
            assertThat(id).as("the child engine started a sandbox").isNotNull();
            // Starting an engine reaps what it takes for dead: runtime state and cgroups, host-wide.
            new Engine(new OciDriver(OciDriverConfig.defaults().withStateRoot(ownRoot))).close();
            child.getOutputStream().write("exec\n".getBytes(StandardCharsets.UTF_8));
            child.getOutputStream().flush();
            String answer = out.readLine();
            assertThat(answer).as("the child's sandbox still runs after another engine started").isEqualTo("ALIVE hello");
        } finally {
            child.getOutputStream().close();
            if (!child.waitFor(60, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
    }

    /** The child: an engine on the state root given, one sandbox; on a line "exec", runs echo in it and says so; ends at EOF. */
    public static void main(String[] args) throws Exception {
        try (Engine engine = new Engine(new OciDriver(OciDriverConfig.defaults().withStateRoot(Path.of(args[0]))));
             Sandbox sandbox = engine.create(SandboxSpec.defaults());
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            System.out.println("READY " + sandbox.id());
            System.out.flush();
            for (String line; (line = in.readLine()) != null; ) {
                try {
                    System.out.println("ALIVE " + sandbox.exec(ExecRequest.of("echo", "hello")).stdoutText().trim());
                } catch (RuntimeException e) {
                    System.out.println("DEAD " + e.getMessage());
                }
                System.out.flush();
            }
        }
    }
}
