package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The launcher's spec from a bundle ({@link Launcher#spec}): every control carried over, and a bundle it cannot honour refused. */
class LauncherSpecTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static ObjectNode bundle() {
        return (ObjectNode) JSON.readTree("""
                {"process": {"user": {"uid": 1000, "gid": 1000}, "args": ["/.airlock/airlock-agent", "/run/airlock/agent.sock"],
                             "env": ["PATH=/usr/bin:/bin"], "cwd": "/workspace", "noNewPrivileges": true,
                             "capabilities": {"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []},
                             "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 1024, "hard": 1024}]},
                 "root": {"path": "/run/airlock/image", "readonly": true}, "hostname": "sandbox",
                 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
                            {"destination": "/usr", "type": "bind", "source": "/usr",
                             "options": ["rbind", "ro", "nosuid", "nodev", "rro", "rnosuid", "rnodev"]},
                            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "size=1024", "mode=1777"]}],
                 "linux": {"namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"},
                                          {"type": "user"}, {"type": "cgroup"}],
                           "uidMappings": [{"containerID": 0, "hostID": 2000000000, "size": 65536}],
                           "gidMappings": [{"containerID": 0, "hostID": 2000000000, "size": 65536}],
                           "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"]}}
                """);
    }

    private static String spec(JsonNode bundle) {
        return Launcher.spec(bundle, List.of(Path.of("/sys/fs/cgroup/memory/airlock/x")), Path.of("/run/airlock-launch/f.bpf"),
                Path.of("/run/airlock/x/runtime.log"));
    }

    /**
     * A start compares its profile with the one compiled last instead of hashing it again: a profile that differs in one
     * rule, or the same tree changed after it was compiled, must still get a program of its own.
     */
    @Test
    void aSeccompProfileChangedInOneRuleGetsItsOwnProgram() throws IOException {
        Files.createDirectories(Launcher.STATE);
        Set<Path> before = programs();
        ObjectNode profile = Seccomp.defaultProfile();
        Path original = Launcher.compiled(profile);
        List<Path> made = new ArrayList<>();
        try {
            ObjectNode fewer = profile.deepCopy();
            ArrayNode names = (ArrayNode) fewer.get("syscalls").get(0).get("names");
            names.remove(names.size() - 1);
            Path changed = Launcher.compiled(fewer);
            made.add(changed);
            assertThat(changed).isNotEqualTo(original);
            assertThat(Files.readAllBytes(changed)).isNotEqualTo(Files.readAllBytes(original));
            assertThat(Launcher.compiled(profile)).isEqualTo(original);

            ((ArrayNode) profile.get("syscalls").get(0).get("names")).remove(0);
            Path afterward = Launcher.compiled(profile);
            made.add(afterward);
            assertThat(afterward).isNotEqualTo(original).isNotEqualTo(changed);
        } finally {
            for (Path p : made) {
                if (!before.contains(p)) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    private static Set<Path> programs() throws IOException {
        try (Stream<Path> files = Files.list(Launcher.STATE)) {
            return files.collect(Collectors.toSet());
        }
    }

    @Test
    void everyControlOfTheBundleBecomesALine() {
        List<String> lines = spec(bundle()).lines().toList();
        assertThat(lines).containsSubsequence(
                "log\t/run/airlock/x/runtime.log", "idmap\t2000000000\t65536", "network\tnew", "cgroup\t/sys/fs/cgroup/memory/airlock/x",
                "rootfs\t/run/airlock/image", "hostname\tsandbox", "seccomp\t/run/airlock-launch/f.bpf",
                "mount\tproc\t/proc\tproc\t14\t\t0",
                // rbind, ro, nosuid, nodev: MS_BIND|MS_REC|MS_RDONLY|MS_NOSUID|MS_NODEV; rro, rnosuid, rnodev recursively
                "mount\t/usr\t/usr\tbind\t" + (4096 + 16384 + 1 + 2 + 4) + "\t\t7",
                "mount\ttmpfs\t/tmp\ttmpfs\t6\tsize=1024,mode=1777\t0",
                "device\t/dev/null\t/dev/null", "symlink\tpts/ptmx\t/dev/ptmx",
                // read-only paths first, then masks, as runc orders them
                "readonly\t/proc/sys", "mask\t/proc/kcore",
                "rlimit\t7\t1024\t1024", "user\t1000\t1000", "cwd\t/workspace", "env\tPATH=/usr/bin:/bin",
                "arg\t/.airlock/airlock-agent", "arg\t/run/airlock/agent.sock");
    }

    @Test
    void aBundleWeakenedToTheHostNetworkSaysSo() {
        ObjectNode b = bundle();
        var namespaces = (tools.jackson.databind.node.ArrayNode) b.get("linux").get("namespaces");
        namespaces.remove(1);
        assertThat(spec(b)).contains("network\thost\n");
    }

    @Test
    void aBundleTheLauncherCannotHonourIsRefused() {
        ObjectNode writable = bundle();
        ((ObjectNode) writable.get("root")).put("readonly", false);
        assertThatThrownBy(() -> spec(writable)).isInstanceOf(AirlockException.class).hasMessageContaining("a read-only root");

        ObjectNode capable = bundle();
        ((tools.jackson.databind.node.ArrayNode) capable.get("process").get("capabilities").get("bounding")).add("CAP_SYS_ADMIN");
        assertThatThrownBy(() -> spec(capable)).isInstanceOf(AirlockException.class).hasMessageContaining("no capability in bounding");

        ObjectNode joined = bundle();
        ((ObjectNode) joined.get("linux").get("namespaces").get(5)).put("path", "/proc/42/ns/user");
        assertThatThrownBy(() -> spec(joined)).isInstanceOf(AirlockException.class).hasMessageContaining("no namespace to join");

        ObjectNode twoMaps = bundle();
        ((tools.jackson.databind.node.ArrayNode) twoMaps.get("linux").get("uidMappings")).addObject().put("containerID", 65536)
                .put("hostID", 1).put("size", 1);
        assertThatThrownBy(() -> spec(twoMaps)).isInstanceOf(AirlockException.class).hasMessageContaining("one id mapping");
    }

    @Test
    void aFieldWithATabIsRefusedWithItsName() {
        ObjectNode b = bundle();
        ((ObjectNode) b.get("mounts").get(1)).put("source", "/srv/a\tb");
        assertThatThrownBy(() -> spec(b)).isInstanceOf(AirlockException.class).hasMessageContaining("has a tab, newline or NUL")
                .hasMessageContaining("rename it");
    }
}
