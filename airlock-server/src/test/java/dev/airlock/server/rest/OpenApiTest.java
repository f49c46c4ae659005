package dev.airlock.server.rest;

import dev.airlock.server.AirlockServer;
import dev.airlock.server.wire.Json;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The served openapi.json and the routing table ({@link RestApi#routes()}) describe the same
 * endpoints: a route added without its OpenAPI entry, or an entry left behind by a removed route,
 * fails here. (ServerErrorsTest checks that docs/rest-api.md names nothing openapi.json lacks.)
 */
class OpenApiTest {

    private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "patch", "head", "options");

    @Test
    void everyRouteIsInTheOpenApiDocumentAndNothingElse() throws IOException {
        Set<String> routed = new TreeSet<>();
        // the table only stores its collaborators; no handler runs here
        for (RestRoute r : new RestApi(null, null, null, new byte[0], null, "127.0.0.1").routes()) {
            routed.add(r.method() + " " + r.template());
        }

        JsonNode api;
        try (InputStream in = AirlockServer.class.getResourceAsStream("openapi.json")) {
            assertThat(in).as("openapi.json on the class path").isNotNull();
            api = Json.MAPPER.readTree(in);
        }
        Set<String> documented = new TreeSet<>();
        for (Map.Entry<String, JsonNode> path : api.get("paths").properties()) {
            for (Map.Entry<String, JsonNode> op : path.getValue().properties()) {
                if (METHODS.contains(op.getKey())) {
                    documented.add(op.getKey().toUpperCase(Locale.ROOT) + " " + path.getKey());
                }
            }
        }

        assertThat(routed).as("routes of RestApi").contains("POST /v1/run", "POST /v1/sandboxes/{id}/exec");
        assertThat(documented).as("operations of openapi.json (left) against routes of RestApi (right)").isEqualTo(routed);
    }

    @Test
    void everyReferencedSchemaExists() throws IOException {
        String text;
        try (InputStream in = AirlockServer.class.getResourceAsStream("openapi.json")) {
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        JsonNode schemas = Json.MAPPER.readTree(text).get("components").get("schemas");
        Matcher m = Pattern.compile("\"#/components/schemas/([^\"]+)\"").matcher(text);
        while (m.find()) {
            assertThat(schemas.has(m.group(1))).as("schema %s referenced in openapi.json", m.group(1)).isTrue();
        }
    }
}
