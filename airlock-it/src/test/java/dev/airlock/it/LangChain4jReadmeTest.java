package dev.airlock.it;

import dev.airlock.cli.AirlockCli;
import dev.airlock.server.audit.AuditReader;
import dev.airlock.server.audit.AuditRecord;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.mcp.McpToolProvider;
import dev.langchain4j.mcp.client.DefaultMcpClient;
import dev.langchain4j.mcp.client.McpClient;
import dev.langchain4j.mcp.client.transport.McpTransport;
import dev.langchain4j.mcp.client.transport.http.StreamableHttpMcpTransport;
import dev.langchain4j.mcp.client.transport.stdio.StdioMcpTransport;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.AiServices;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The README's LangChain4j snippet, compiled and run. The code between the two README markers
 * below is the README's block character for character ({@link ReadmeSnippetTest} fails when the
 * two differ), and it runs here through LangChain4j's own MCP client and AI service, against a
 * live server over Streamable HTTP and against {@code airlock mcp} over stdio. The one stand-in is
 * the model: {@link ScriptedModel} asks for run_code as a model would and answers with what the
 * tool returned, so what it saw of the tools and of the result is what a real model would see.
 */
class LangChain4jReadmeTest {

    // README snippet: LangChain4j (begin)
    interface Coder { String solve(String task); }

    // Streamable HTTP: mcpUrl is http://127.0.0.1:7700/mcp on `bin/airlock serve`, tokenFile its
    // token (/var/lib/airlock/token) or the token file of another client in the policy.
    static McpTransport overHttp(String mcpUrl, Path tokenFile) throws IOException {
        String token = Files.readString(tokenFile).trim();
        return StreamableHttpMcpTransport.builder()
                .url(mcpUrl)
                .customHeaders(Map.of("Authorization", "Bearer " + token))
                .build();
    }

    // stdio: airlockMcp is List.of("/path/to/airlock/bin/airlock", "mcp") (runc needs root).
    static McpTransport overStdio(List<String> airlockMcp) {
        return StdioMcpTransport.builder().command(airlockMcp).build();
    }

    // Any LangChain4j chat model, given the tools the token grants (run_code, sandbox_create, ...):
    // solve(model, overHttp(url, tokenFile), "Compute the 90th Fibonacci number with run_code.")
    static String solve(ChatModel model, McpTransport transport, String task) throws Exception {
        try (McpClient airlock = DefaultMcpClient.builder().transport(transport).build()) {
            Coder coder = AiServices.builder(Coder.class)
                    .chatModel(model)
                    .toolProvider(McpToolProvider.builder().mcpClients(airlock).build())
                    .build();
            return coder.solve(task);
        }
    }
    // README snippet: LangChain4j (end)

    private static final String TASK = "Compute the 90th Fibonacci number with run_code.";
    private static final String FIBONACCI = "a, b = 0, 1\nfor _ in range(90):\n    a, b = b, a + b\nprint(a)\n";
    private static final String FIBONACCI_90 = "2880067194370816120";
    private static final List<String> TOOLS = List.of("run_code", "sandbox_create", "sandbox_exec", "sandbox_write_file",
            "sandbox_read_file", "sandbox_list_files", "sandbox_destroy", "sandbox_list");

    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        live = LiveServer.start(c -> c.withPoolSize(0));
    }

    @AfterAll
    static void closeServer() {
        if (live != null) {
            live.close(); // fails if a sandbox of this server left anything on the host
        }
    }

    @Test
    void theReadmeSnippetRunsPythonInASandboxOverStreamableHttp() throws Exception {
        ScriptedModel model = new ScriptedModel(FIBONACCI);

        String answer = solve(model, overHttp(live.uri() + "/mcp", live.dataDir.resolve("token")), TASK);

        assertThat(model.offeredTools()).as("the tools LangChain4j listed and offered the model").containsAll(TOOLS);
        assertThat(model.toolResult().isError()).as("run_code's result: " + model.toolResult().text()).isFalse();
        assertThat(answer).contains(FIBONACCI_90);
        assertThat(live.audit(null, AuditRecord.REQUEST))
                .as("the call was authorized and recorded as the token's client over MCP HTTP")
                .anyMatch(r -> r.actor().startsWith("local@mcp-http") && r.detail().contains("run_code"));
        assertThat(live.client.list()).as("run_code's sandbox is destroyed with the call").isEmpty();
    }

    @Test
    void aFailedProgramReachesTheModelAsAnErrorItCanActOn() throws Exception {
        ScriptedModel model = new ScriptedModel("import sys\nprint('no such column: price', file=sys.stderr)\nsys.exit(3)\n");

        String answer = solve(model, overHttp(live.uri() + "/mcp", live.dataDir.resolve("token")), TASK);

        assertThat(model.toolResult().isError()).as("run_code's result: " + model.toolResult().text()).isTrue();
        assertThat(answer).contains("exited with code 3", "no such column: price");
    }

    @Test
    void aTokenTheServerDoesNotKnowGetsNoTools(@TempDir Path dir) throws Exception {
        Path forged = Files.writeString(dir.resolve("token"), "al_" + "0".repeat(43));
        ScriptedModel model = new ScriptedModel(FIBONACCI);

        assertThatThrownBy(() -> solve(model, overHttp(live.uri() + "/mcp", forged), TASK))
                .as("the client is refused before it can list a tool").hasMessageContaining("401");
        assertThat(model.offeredTools()).as("tools offered to the model with a forged token").isEmpty();
    }

    @Test
    void theReadmeSnippetRunsPythonInASandboxOverStdio(@TempDir Path dataDir) throws Exception {
        ScriptedModel model = new ScriptedModel(FIBONACCI);
        List<String> airlockMcp = List.of(ProcessHandle.current().info().command().orElse("java"),
                "-cp", System.getProperty("java.class.path"), AirlockCli.class.getName(),
                "mcp", "--data-dir", dataDir.toString(), "--pool-size", "0");

        String answer = solve(model, overStdio(airlockMcp), TASK);

        assertThat(model.offeredTools()).as("the tools LangChain4j listed and offered the model").containsAll(TOOLS);
        assertThat(model.toolResult().isError()).as("run_code's result: " + model.toolResult().text()).isFalse();
        assertThat(answer).contains(FIBONACCI_90);
        // Closing the client ends `airlock mcp`, which destroys what its session made.
        await().atMost(Duration.ofSeconds(30)).until(() -> ProcessHandle.current().children()
                .noneMatch(p -> p.info().arguments().map(a -> List.of(a).contains(dataDir.toString())).orElse(false)));
        List<String> sandboxes = sandboxesIn(dataDir);
        assertThat(sandboxes).as("sandboxes the stdio server recorded").isNotEmpty();
        for (String sandbox : sandboxes) {
            assertThat(LiveServer.leftovers(sandbox)).as("what " + sandbox + " left on the host").isEmpty();
        }
    }

    /** The ids of every sandbox in the audit log of the server that kept its data in {@code dataDir}. */
    private static List<String> sandboxesIn(Path dataDir) {
        try (AuditReader reader = AuditReader.open(dataDir.resolve("airlock.db"))) {
            return reader.query(new AuditReader.Query(null, AuditRecord.LIFECYCLE, null, 0)).stream()
                    .map(AuditRecord::sandbox).filter(id -> id != null && !id.isEmpty()).distinct().toList();
        }
    }

    /**
     * A model that, offered tools, asks for run_code with its Python code, and once the tool's
     * result is back, answers with that result. It keeps what it was offered and what came back.
     */
    static final class ScriptedModel implements ChatModel {

        private final String python;
        private final List<String> offeredTools = new ArrayList<>();
        private volatile ToolExecutionResultMessage toolResult;

        ScriptedModel(String python) {
            this.python = python;
        }

        @Override
        public ChatResponse doChat(ChatRequest request) {
            List<ChatMessage> messages = request.messages();
            if (messages.getLast() instanceof ToolExecutionResultMessage result) {
                toolResult = result;
                return ChatResponse.builder().aiMessage(AiMessage.from(result.text())).build();
            }
            request.toolSpecifications().stream().map(ToolSpecification::name).forEach(offeredTools::add);
            String arguments = JsonMapper.builder().build()
                    .writeValueAsString(Map.of("language", "python", "code", python));
            ToolExecutionRequest call = ToolExecutionRequest.builder().id("call-1").name("run_code").arguments(arguments).build();
            return ChatResponse.builder().aiMessage(AiMessage.from(call)).build();
        }

        List<String> offeredTools() {
            return List.copyOf(offeredTools);
        }

        ToolExecutionResultMessage toolResult() {
            assertThat(toolResult).as("the model got run_code's result back").isNotNull();
            return toolResult;
        }
    }
}
