package dev.airlock.microvm;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverSettings;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The microvm driver's settings as the server holds them: read back as written, and refused with what to give. */
class MicroVmDriverConfigTest {

    @Test
    void settingsReadBackAsWritten() {
        MicroVmDriverConfig config = new MicroVmDriverConfig(Path.of("/run/al"), Path.of("/var/cache/x"), Duration.ofSeconds(90), MicroVmDriverConfig.KVM,
                Set.of(Path.of("/var/lib/airlock-data")), Path.of("/var/lib/airlock-data/images"));
        assertThat(MicroVmDriverConfig.fromSettings(config.toSettings())).isEqualTo(config);
        assertThat(MicroVmDriverConfig.fromSettings(DriverSettings.of(MicroVmDriverProvider.NAME))).isEqualTo(MicroVmDriverConfig.defaults());
    }

    @Test
    void anUnknownOptionOrABadTimeoutIsRefusedNamingWhatToGive() {
        assertThatThrownBy(() -> MicroVmDriverConfig.fromSettings(new DriverSettings("microvm", Map.of("runtime", "runc"), Set.of())))
                .isInstanceOf(AirlockException.class).hasMessageContaining("no option 'runtime'").hasMessageContaining("startTimeout");
        assertThatThrownBy(() -> MicroVmDriverConfig.fromSettings(new DriverSettings("microvm", Map.of("startTimeout", "60"), Set.of())))
                .isInstanceOf(AirlockException.class).hasMessageContaining("PT60S");
    }

    @Test
    void aStateRootTooLongForTheAgentsSocketIsRefused() {
        Path longRoot = Path.of("/run/" + "x".repeat(60));
        assertThatThrownBy(() -> MicroVmDriverConfig.defaults().withStateRoot(longRoot))
                .isInstanceOf(AirlockException.class).hasMessageContaining("past the kernel's limit of 107");
    }
}
