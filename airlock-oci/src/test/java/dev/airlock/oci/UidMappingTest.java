package dev.airlock.oci;

import dev.airlock.core.ExecResult;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How the OCI driver's user namespace maps the sandbox's ids: uid and gid 0 to 65535 inside are a
 * host range of the sandbox's own, above every host account. (That the program runs as uid 1000
 * and cannot become root is the driver contract's; the map itself is this driver's way.)
 */
class UidMappingTest extends SandboxTestBase {

    @Test
    void runsAsUid1000MappedToAnUnprivilegedHostUid() {
        ExecResult r = ok(python("""
                import os
                print(os.getresuid(), os.getresgid(), os.getgroups())
                print(open("/proc/self/uid_map").read().split())
                print(open("/proc/self/gid_map").read().split())
                """));
        String[] lines = r.stdoutText().split("\n");
        assertThat(lines[0]).isEqualTo("(1000, 1000, 1000) (1000, 1000, 1000) []");
        // Sandbox ids 0..65535 map to a range of the sandbox's own, above every host account.
        for (String map : List.of(lines[1], lines[2])) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("\\['0', '(\\d+)', '65536'\\]").matcher(map);
            assertThat(m.matches()).as(map).isTrue();
            assertThat(OciDriverContract.isSandboxUid(CONFIG, Long.parseLong(m.group(1)), 0)).as(map).isTrue();
        }
        assertThat(lines[1]).isEqualTo(lines[2]);
    }
}
