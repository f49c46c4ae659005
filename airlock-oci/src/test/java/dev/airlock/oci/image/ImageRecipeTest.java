package dev.airlock.oci.image;

import dev.airlock.core.AirlockException;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Image recipes: what they hold, the built-in python-data, and errors that name the line and the field. */
class ImageRecipeTest {

    @Test
    void aRecipeHoldsPackagesFilesAndEnvironment(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("tool.sh"), "#!/bin/sh\necho hi\n");
        ImageRecipe r = ImageRecipe.load(write(dir, """
                suite: bookworm
                packages: [python3-minimal, busybox]
                files:
                  - path: /etc/motd
                    content: "hello\\n"
                  - path: /usr/local/bin/tool
                    from: tool.sh
                    executable: true
                environment:
                  GREETING: hi there
                """));
        assertThat(r.suite()).isEqualTo("bookworm");
        assertThat(r.packages()).containsExactly("python3-minimal", "busybox");
        assertThat(r.environment()).isEqualTo(Map.of("GREETING", "hi there"));
        assertThat(r.files()).extracting(ImageRecipe.File::path).containsExactly("/etc/motd", "/usr/local/bin/tool");

        List<String> entries = new ArrayList<>();
        try (TarArchiveInputStream tar = new TarArchiveInputStream(new ByteArrayInputStream(r.layer()))) {
            for (var e = tar.getNextEntry(); e != null; e = tar.getNextEntry()) {
                entries.add(e.getName() + " " + Integer.toOctalString(e.getMode()) + " "
                        + new String(tar.readAllBytes(), StandardCharsets.UTF_8).strip());
            }
        }
        assertThat(entries).containsExactly("etc/motd 644 hello", "usr/local/bin/tool 755 #!/bin/sh\necho hi",
                "etc/airlock/environment 644 GREETING=hi there");
    }

    @Test
    void pythonDataIsBuiltIn() {
        ImageRecipe r = ImageRecipe.builtIn("python-data");
        assertThat(r.packages()).contains("python3-numpy", "python3-pandas", "python3-matplotlib", "python3-scipy",
                "python3-ipykernel", "python3-jupyter-client");
        assertThat(ImageRecipe.builtIn("no-such-recipe")).isNull();
    }

    @Test
    void theEnvironmentIsReadBackFromTheImageAndItsFileIsNotTrusted(@TempDir Path root) throws IOException {
        Files.createDirectories(root.resolve("etc/airlock"));
        Files.writeString(root.resolve(ImageRecipe.ENVIRONMENT_FILE), "A=1\nnot a line\nLD_PRELOAD=/x.so\n9X=2\nB=two=2\n");
        assertThat(ImageRecipe.readEnvironment(root)).isEqualTo(Map.of("A", "1", "B", "two=2"));
        Files.delete(root.resolve(ImageRecipe.ENVIRONMENT_FILE));
        Files.createSymbolicLink(root.resolve(ImageRecipe.ENVIRONMENT_FILE), Path.of("/etc/hostname"));
        assertThat(ImageRecipe.readEnvironment(root)).as("a link is not followed").isEmpty();
    }

    @Test
    void errorsNameTheLineAndTheField() {
        bad("packages: python3\n", "line 1, packages: expected a list");
        bad("suite: bookworm\n", "line 1: 'packages' is missing");
        bad("packages: [a]\nextras: 1\n", "line 2, extras: unknown field 'extras'");
        bad("packages: [ok, 'Not A Package']\n", "line 1, packages[1]: 'Not A Package' is not a Debian package name");
        bad("packages: [a]\nfiles:\n  - path: etc/motd\n    content: x\n", "line 3, files[0].path: 'etc/motd' is not a plain absolute path");
        bad("packages: [a]\nfiles:\n  - path: /etc/../root/x\n    content: x\n", "files[0].path");
        bad("packages: [a]\nfiles:\n  - path: /etc/x\n", "line 3, files[0]: give the file's 'content' or a host file");
        bad("packages: [a]\nfiles:\n  - path: /etc/x\n    from: /etc/hostname\n", "a built-in recipe cannot copy host files");
        bad("packages: [a]\nenvironment:\n  LD_PRELOAD: /x.so\n", "line 3, environment.LD_PRELOAD: LD_PRELOAD is not the image's to set");
        bad("packages: [a]\nenvironment:\n  1X: y\n", "'1X' is not a variable name");
        bad("packages: [a\n", "line 2: not valid YAML");
        bad("", "is empty");
    }

    private static void bad(String yaml, String message) {
        assertThatThrownBy(() -> ImageRecipe.parse("r.yaml", yaml, null)).isInstanceOf(AirlockException.class)
                .hasMessageContaining(message).hasMessageStartingWith("r.yaml");
    }

    private static Path write(Path dir, String text) throws IOException {
        return Files.writeString(dir.resolve("recipe.yaml"), text);
    }
}
