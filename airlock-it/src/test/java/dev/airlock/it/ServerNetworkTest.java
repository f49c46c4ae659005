package dev.airlock.it;

import com.sun.net.httpserver.HttpServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.http.HttpResponse;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The REST side of network egress: a policy at creation, replacing it at runtime, and the egress
 * records. The "public" host is a server on 127.0.0.1 reached by the name test.example through
 * the policy's name map; the Airlock server itself, on 127.0.0.1 too, stays unreachable.
 */
class ServerNetworkTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static LiveServer live;
    private static HttpServer origin;

    @BeforeAll
    static void start() throws IOException {
        live = LiveServer.withPolicy(LiveServer.NET_POLICY, c -> c.withPoolSize(0));
        origin = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 10);
        origin.createContext("/", ex -> {
            byte[] body = ("hello from " + ex.getRequestURI()).getBytes();
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        });
        origin.start();
    }

    @AfterAll
    static void stop() {
        origin.stop(0);
        if (live != null) {
            live.close();
        }
    }

    private static String policy(String allowHost) {
        return """
                {"allow": [{"host": "%s", "ports": [%d]}], "ranges": ["127.0.0.0/8"],
                 "hosts": {"test.example": ["127.0.0.1"], "other.example": "127.0.0.1"}}""".formatted(allowHost, origin.getAddress().getPort());
    }

    private static JsonNode ok(HttpResponse<String> r, int status) throws IOException {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        return JSON.readTree(r.body());
    }

    private static String curl(String id, String url) throws IOException {
        JsonNode result = ok(live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                "{\"command\": [\"python3\", \"-c\", \"import urllib.request, urllib.error, sys\\ntry:\\n print(urllib.request.urlopen(sys.argv[1]).read().decode())\\n"
                        + "except urllib.error.HTTPError as e:\\n print(e.code, e.read().decode())\", \"" + url + "\"],"
                        // NO_PROXY names 127.0.0.1 (which would go direct and fail): send even it to the proxy.
                        + " \"env\": {\"NO_PROXY\": \"\", \"no_proxy\": \"\"}}"), 200);
        return result.get("stdout").asString();
    }

    @Test
    void createWithAPolicyReplaceItAndReadTheRecords() throws IOException {
        JsonNode created = ok(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"net\", \"network\": " + policy("test.example") + "}"), 201);
        String id = created.get("id").asString();
        assertThat(created.get("network").get("allow").get(0).get("host").asString()).isEqualTo("test.example");
        assertThat(created.get("network").get("maxConnections").asInt()).isEqualTo(64);
        int port = origin.getAddress().getPort();

        assertThat(curl(id, "http://test.example:" + port + "/one")).isEqualTo("hello from /one\n");
        assertThat(curl(id, "http://other.example:" + port + "/two")).startsWith("403 airlock egress: blocked by rule 'default'");
        // The Airlock server is on 127.0.0.1 too, inside the named range: still refused.
        assertThat(curl(id, live.uri() + "/health")).startsWith("403 airlock egress: blocked by rule 'airlock-server'");

        JsonNode replaced = ok(live.raw("PUT", "/v1/sandboxes/" + id + "/network", policy("other.example")), 200);
        assertThat(replaced.get("allow").get(0).get("host").asString()).isEqualTo("other.example");
        assertThat(ok(live.raw("GET", "/v1/sandboxes/" + id + "/network", null), 200)).isEqualTo(replaced);
        assertThat(curl(id, "http://test.example:" + port + "/three")).startsWith("403");
        assertThat(curl(id, "http://other.example:" + port + "/four")).isEqualTo("hello from /four\n");

        JsonNode records = ok(live.raw("GET", "/v1/sandboxes/" + id + "/egress", null), 200).get("records");
        assertThat(records.size()).isEqualTo(5);
        JsonNode first = records.get(0);
        assertThat(first.get("destination").asString()).isEqualTo("test.example");
        assertThat(first.get("allowed").asBoolean()).isTrue();
        assertThat(first.get("address").asString()).isEqualTo("127.0.0.1");
        assertThat(first.get("protocol").asString()).isEqualTo("http-forward");
        assertThat(first.get("bytesDown").asLong()).isPositive();
        assertThat(records.get(2).get("rule").asString()).isEqualTo("airlock-server");
        ok(live.raw("DELETE", "/v1/sandboxes/" + id, null), 204);
    }

    @Test
    void invalidPoliciesAreRefusedNamingTheField() throws IOException {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"network\": {\"allow\": [{\"host\": \"bad_name\"}]}}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("network.allow.host");
        r = live.raw("POST", "/v1/sandboxes", "{\"network\": {\"ranges\": [\"10.0.0.0/40\"]}}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("network.ranges");
        r = live.raw("POST", "/v1/sandboxes", "{\"network\": {\"allowed\": []}}");
        assertThat(r.statusCode()).isEqualTo(400);
        assertThat(r.body()).contains("unknown field 'allowed'");
    }

    @Test
    void aSandboxWithoutNetworkCannotBeGivenSomeLater() throws IOException {
        String id = ok(live.raw("POST", "/v1/sandboxes", "{\"profile\": \"net\", \"network\": {}}"), 201).get("id").asString();
        HttpResponse<String> r = live.raw("PUT", "/v1/sandboxes/" + id + "/network", policy("test.example"));
        assertThat(r.statusCode()).isEqualTo(409);
        assertThat(r.body()).contains("created without network");
        assertThat(ok(live.raw("GET", "/v1/sandboxes/" + id + "/egress", null), 200).get("records").size()).isZero();
        ok(live.raw("DELETE", "/v1/sandboxes/" + id, null), 204);
    }
}
