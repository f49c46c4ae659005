package dev.airlock.server.e2b;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The endpoint an E2B request is filed under: one per route, whatever sandbox or made-up path it names. */
class E2bDoorTemplateTest {

    @Test
    void sandboxAndContextIdsAndLongSegmentsAreFiledAsTheirPlace() {
        assertThat(E2bDoor.template("/v2/sandboxes")).isEqualTo("/v2/sandboxes");
        assertThat(E2bDoor.template("/sandboxes/al-3f9c-abc/pause")).isEqualTo("/sandboxes/{id}/pause");
        assertThat(E2bDoor.template("/v2/sandboxes/al-x/connect")).isEqualTo("/v2/sandboxes/{id}/connect");
        assertThat(E2bDoor.template("/contexts/ctx-1/restart")).isEqualTo("/contexts/{context}/restart");
        assertThat(E2bDoor.template("/process.Process/Start")).isEqualTo("/process.Process/Start");
        assertThat(E2bDoor.template("/x/" + "y".repeat(40) + "/\u0007")).isEqualTo("/x/{...}/?");
        assertThat(E2bDoor.template("/")).isEqualTo("/");
    }
}
