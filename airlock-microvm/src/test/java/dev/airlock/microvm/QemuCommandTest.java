package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Limits;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What makes a guest boot fast, without booting one: the kernel command line, and modules without their signatures. */
class QemuCommandTest {

    @Test
    void underTcgTheGuestIsToldTheHostsTscFrequencyAndSkipsTheCryptoSelfTests() {
        String tcg = Qemu.kernelCommandLine(MicroVmDriverConfig.TCG, Limits.DEFAULTS, false, false, false, false);
        assertThat(tcg).contains("quiet", "no_timer_check", "cryptomgr.notests", "tsc=reliable",
                "tsc_early_khz=" + Qemu.hostTscKhz(), "airlock.pids=" + Limits.DEFAULTS.pids());
        assertThat(Qemu.hostTscKhz()).isBetween(100_000L, 10_000_000L);
        // Under KVM the guest reads the TSC's frequency from kvmclock.
        assertThat(Qemu.kernelCommandLine(MicroVmDriverConfig.KVM, Limits.DEFAULTS, false, false, false, false)).doesNotContain("tsc");
    }

    @Test
    void aModulesSignatureIsCutOffAndAnUnsignedModuleIsLeftAsItIs() throws Exception {
        byte[] code = "\u007fELF module code".getBytes(StandardCharsets.US_ASCII);
        byte[] signature = new byte[681];
        ByteArrayOutputStream signed = new ByteArrayOutputStream();
        signed.write(code);
        signed.write(signature);
        signed.write(ByteBuffer.allocate(12).putInt(8, signature.length).array());
        signed.write("~Module signature appended~\n".getBytes(StandardCharsets.US_ASCII));

        assertThat(GuestImage.withoutSignature(signed.toByteArray())).isEqualTo(code);
        assertThat(GuestImage.withoutSignature(code)).isSameAs(code);

        byte[] lying = signed.toByteArray();
        ByteBuffer.wrap(lying).putInt(code.length + signature.length + 8, 1 << 20);
        assertThatThrownBy(() -> GuestImage.withoutSignature(lying)).isInstanceOf(AirlockException.class)
                .hasMessageContaining("damaged");
    }
}
