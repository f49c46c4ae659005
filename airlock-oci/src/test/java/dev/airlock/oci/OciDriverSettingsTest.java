package dev.airlock.oci;

import dev.airlock.core.AirlockException;
import dev.airlock.core.DriverProvider;
import dev.airlock.core.DriverSettings;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The server holds the OCI driver's settings as driver-neutral text and finds the driver by name. */
class OciDriverSettingsTest {

    @Test
    void settingsSurviveTheTripThroughTheServersDriverNeutralForm() {
        OciDriverConfig config = new OciDriverConfig("runsc", Path.of("/run/al-test"), 300_000, Duration.ofSeconds(7))
                .withProtectedPaths(Set.of(Path.of("/srv/data")));
        DriverSettings settings = config.toSettings();
        assertThat(settings.driver()).isEqualTo("oci");
        assertThat(OciDriverConfig.fromSettings(settings)).isEqualTo(config);
        assertThat(OciDriverConfig.fromSettings(DriverSettings.of("oci"))).isEqualTo(OciDriverConfig.defaults());
    }

    @Test
    void weakenedSettingsNeverReachAServer() {
        assertThatThrownBy(() -> OciDriverConfig.defaults().withWeakenings(Set.of(Weakening.NO_SECCOMP)).toSettings())
                .isInstanceOf(AirlockException.class).hasMessageContaining("airlock verify only");
    }

    @Test
    void anUnknownOrMalformedOptionIsRefusedNamingIt() {
        assertThatThrownBy(() -> OciDriverConfig.fromSettings(new DriverSettings("oci", Map.of("weakenings", "NO_SECCOMP"), Set.of())))
                .isInstanceOf(AirlockException.class).hasMessageContaining("no option 'weakenings'").hasMessageContaining("runtime");
        assertThatThrownBy(() -> OciDriverConfig.fromSettings(new DriverSettings("oci", Map.of("startTimeout", "20"), Set.of())))
                .isInstanceOf(AirlockException.class).hasMessageContaining("PT20S");
    }

    @Test
    void theDriverIsRegisteredByName() {
        assertThat(ServiceLoader.load(DriverProvider.class).stream().map(p -> p.get().name())).contains("oci");
    }

    @Test
    void theContainerTierKeepsTheContainerRuntimeItWasGivenAndGvisorIsRunsc() {
        OciDriverProvider provider = new OciDriverProvider();
        DriverSettings launcher = OciDriverConfig.defaults().withRuntime(Launcher.NAME).toSettings();
        assertThat(provider.settingsFor(dev.airlock.core.Isolation.CONTAINER, launcher).options()).containsEntry("runtime", Launcher.NAME);
        assertThat(provider.settingsFor(dev.airlock.core.Isolation.GVISOR, launcher).options()).containsEntry("runtime", "runsc");
        DriverSettings gvisor = OciDriverConfig.defaults().withRuntime("runsc").toSettings();
        assertThat(provider.settingsFor(dev.airlock.core.Isolation.CONTAINER, gvisor).options()).containsEntry("runtime", "runc");
    }
}
