package dev.airlock.core;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static dev.airlock.core.Refusals.invalid;
import static org.assertj.core.api.Assertions.assertThat;

/** A sandbox id is also a container id, a cgroup name and a directory name: only its one safe shape passes. */
class SandboxIdTest {

    @Test
    void aFreshIdHasTheSafeShapeAndIsOwnedByItsEngine() {
        SandboxId id = SandboxId.random("srv1");
        assertThat(id.value()).matches("al-srv1-[0-9a-f]{16}");
        assertThat(SandboxId.parse(id.value())).isEqualTo(id);
        assertThat(id.toString()).isEqualTo(id.value());
        assertThat(SandboxId.isOwnedBy(id.value(), "srv1")).isTrue();
        assertThat(SandboxId.isOwnedBy(id.value(), "srv")).isFalse();
    }

    @Test
    void freshIdsDoNotRepeat() {
        Set<SandboxId> seen = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            assertThat(seen.add(SandboxId.random("a"))).isTrue();
        }
    }

    @Test
    void anIdThatCouldEscapeAPathOrACgroupIsRefused() {
        invalid(() -> SandboxId.parse("al-a-../../../etc"), "sandbox id 'al-a-../../../etc' is malformed: ids look like al-<owner>-<16 hex digits>");
        invalid(() -> SandboxId.parse("al-a-0123456789abcdef/x"), "is malformed");
        invalid(() -> SandboxId.parse("al-A-0123456789abcdef"), "is malformed");
        invalid(() -> SandboxId.parse("al-a-0123456789ABCDEF"), "is malformed");
        invalid(() -> SandboxId.parse("al-a-0123456789abcde"), "is malformed");
        invalid(() -> SandboxId.parse("al-a-0123456789abcdef0"), "is malformed");
        invalid(() -> SandboxId.parse("al--0123456789abcdef"), "is malformed");
        invalid(() -> SandboxId.parse("al-" + "a".repeat(17) + "-0123456789abcdef"), "is malformed");
        invalid(() -> SandboxId.parse(""), "sandbox id '' is malformed");
        invalid(() -> SandboxId.parse(null), "sandbox id 'null' is malformed");
    }

    @Test
    void aHostileIdIsEchoedPrintableAndShort() {
        invalid(() -> SandboxId.parse("al-a-\u001b[2K\r\n" + "f".repeat(10_000)), "sandbox id 'al-a-?[2K??fff", "...' is malformed");
    }

    @Test
    void ownershipNeedsTheWholeSafeShapeNotJustThePrefix() {
        assertThat(SandboxId.isOwnedBy("al-srv1-0123456789abcdef", "srv1")).isTrue();
        assertThat(SandboxId.isOwnedBy("al-srv1-0123456789abcdef-evil", "srv1")).isFalse();
        assertThat(SandboxId.isOwnedBy("al-srv1-not-hex-at-all!!", "srv1")).isFalse();
        assertThat(SandboxId.isOwnedBy("al-srv10-0123456789abcdef", "srv1")).isFalse();
    }

    @Test
    void theInstanceOfAnIdIsItsOwner() {
        org.assertj.core.api.Assertions.assertThat(SandboxId.instanceOf(SandboxId.random("k76mc6fo").value())).isEqualTo("k76mc6fo");
        org.assertj.core.api.Assertions.assertThat(SandboxId.instanceOf("al-x")).isNull();
        org.assertj.core.api.Assertions.assertThat(SandboxId.instanceOf("cgroup.procs")).isNull();
        org.assertj.core.api.Assertions.assertThat(SandboxId.instanceOf(null)).isNull();
    }
}
