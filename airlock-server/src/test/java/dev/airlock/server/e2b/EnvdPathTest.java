package dev.airlock.server.e2b;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** E2B's home, /home/user, is /workspace under another name: in what the door asks of Airlock, and back in what it answers. */
class EnvdPathTest {

    @Test
    void relativePathsAndTheHomeAreNamedByWhatTheLinkLeadsTo() {
        assertThat(Envd.path("notes/a.txt")).isEqualTo("/workspace/notes/a.txt");
        assertThat(Envd.path("~")).isEqualTo("/workspace");
        assertThat(Envd.path("~/a")).isEqualTo("/workspace/a");
        assertThat(Envd.path("/home/user")).isEqualTo("/workspace");
        assertThat(Envd.path("/home/user/a/b")).isEqualTo("/workspace/a/b");
        assertThat(Envd.path("/tmp/x")).isEqualTo("/tmp/x");
        assertThat(Envd.path("/home/username/x")).as("only the whole component").isEqualTo("/home/username/x");
        assertThat(Envd.path("/home")).isEqualTo("/home");
    }

    @Test
    void answersNameTheHomeAsE2bDoes() {
        assertThat(Envd.shown("/workspace/notes/a.txt")).isEqualTo("/home/user/notes/a.txt");
        assertThat(Envd.shown("/workspace")).isEqualTo("/home/user");
        assertThat(Envd.shown("/workspaces/x")).isEqualTo("/workspaces/x");
        assertThat(Envd.shown("/tmp/x")).isEqualTo("/tmp/x");
    }
}
