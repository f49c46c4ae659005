package dev.airlock.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code airlock image build NAME --recipe FILE} as a user runs it, up to what needs no download:
 * a bad recipe is refused before anything is built, naming the file, the line and the field, and
 * a recipe does not mix with --packages. (Real builds: ImageBuildTest, PythonDataImageTest.)
 */
class ImageRecipeCommandTest {

    /** The default image is listed though no file of it is stored: 'system', first, as the REST API lists it. */
    @Test
    void lsListsTheSystemImageFirst(@TempDir Path dir) throws Exception {
        CliProcess table = CliProcess.run("image", "ls", "--image-dir", dir.resolve("images").toString());
        assertThat(table.exitCode()).as(table.stderr()).isZero();
        assertThat(table.stdout().lines().toList()).hasSize(2);
        assertThat(table.stdout().lines().toList().get(1)).startsWith("system ").endsWith("the host's /usr");
        CliProcess json = CliProcess.run("image", "ls", "--json", "--image-dir", dir.resolve("images").toString());
        assertThat(json.stdout().strip()).isEqualTo("[{\"name\":\"system\",\"digest\":null,\"source\":\"the host's /usr\"}]");
    }

    @Test
    void aBadRecipeIsRefusedWithItsLineAndField(@TempDir Path dir) throws Exception {
        Path recipe = Files.writeString(dir.resolve("tools.yaml"), "packages: [jq]\nfiles:\n  - path: etc/motd\n    content: hi\n");
        CliProcess cli = CliProcess.run("image", "build", "tools", "--recipe", recipe.toString(), "--image-dir", dir.resolve("images").toString());
        assertThat(cli.exitCode()).isEqualTo(AirlockCli.EXIT_USAGE);
        assertThat(cli.stderr()).contains(recipe + " line 3, files[0].path: 'etc/motd' is not a plain absolute path in the image");
        assertThat(dir.resolve("images")).doesNotExist();
    }

    @Test
    void aRecipeDoesNotMixWithPackages(@TempDir Path dir) throws Exception {
        Path recipe = Files.writeString(dir.resolve("r.yaml"), "packages: [jq]\n");
        CliProcess cli = CliProcess.run("image", "build", "tools", "--recipe", recipe.toString(), "--packages", "curl",
                "--image-dir", dir.resolve("images").toString());
        assertThat(cli.exitCode()).isEqualTo(AirlockCli.EXIT_USAGE);
        assertThat(cli.stderr()).contains("--recipe names the packages and the suite: leave out --packages and --suite");
    }
}
