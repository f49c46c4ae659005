package dev.airlock.client;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Objects;

/**
 * A persistent Python interpreter in a sandbox: an IPython kernel whose variables, imports and
 * files persist between {@link #run} calls, as cells of a notebook do. Results come back as
 * Jupyter gives them: the value of the last expression, displays and figures as MIME bundles
 * ({@link CellResult#text()}, {@link CellResult#html()}, {@link CellResult#png()}).
 *
 * <pre>{@code
 * Interpreter py = sandbox.interpreter();
 * py.run("import pandas as pd; df = pd.DataFrame({'x': [1, 2, 3]})");
 * String table = py.run("df.describe()").html();
 * byte[] chart = py.run("df.plot()").png();   // figures come back without plt.show()
 * }</pre>
 *
 * {@link RemoteSandbox#interpreter()} is the sandbox's first context, made on first use;
 * {@link RemoteSandbox#createInterpreter()} makes another. A context ends with its sandbox.
 */
public final class Interpreter {

    private final Transport transport;
    private final String sandbox;
    private volatile String id;

    Interpreter(Transport transport, String sandbox, String id) {
        this.transport = transport;
        this.sandbox = sandbox;
        this.id = id;
    }

    /** The context's id (such as {@code ctx-1}); for the sandbox's first context, found or made on first call. */
    public synchronized String id() {
        if (id == null) {
            InterpreterInfo first = transport.json("GET", path(), null, false, Json::contexts).stream().findFirst().orElse(null);
            id = first != null ? first.id() : transport.json("POST", path(), Json.MAPPER.createObjectNode(), true, Json::context).id();
        }
        return id;
    }

    /** Runs {@code code} as one cell, with the sandbox's execution timeout, and waits for its end. */
    public CellResult run(String code) {
        return run(code, null);
    }

    /**
     * Runs {@code code} as one cell and waits for its end; past {@code timeout} (null: the
     * sandbox's) the cell is interrupted and the context keeps its state.
     */
    public CellResult run(String code, Duration timeout) {
        Objects.requireNonNull(code, "code");
        return transport.json("POST", path(id(), "run"), body(code, timeout), true, Json::cell);
    }

    /**
     * Runs {@code code}, handing its outputs to {@code handler} while it runs, and returns the
     * result at its end. Interrupting the calling thread abandons the request, which interrupts the
     * cell, and throws {@link AirlockInterruptedException}.
     */
    public CellResult run(String code, Duration timeout, CellHandler handler) {
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(handler, "handler");
        HttpRequest request = transport.request(path(id(), "run"), true)
                .header("Accept", "application/x-ndjson")
                .header("Content-Type", "application/json")
                .POST(Transport.jsonBody(body(code, timeout)))
                .build();
        String what = Transport.describe(request);
        HttpResponse<InputStream> response = transport.open(request);
        if (!response.headers().firstValue("Content-Type").orElse("").contains("ndjson")) {
            return Transport.parse(transport.readJson(response), Json::cell, response.statusCode(), what);
        }
        try (InputStream in = response.body()) {
            NdjsonLines lines = new NdjsonLines(in, ExecStream.MAX_LINE);
            byte[] line;
            while ((line = lines.next()) != null) {
                if (Thread.currentThread().isInterrupted()) {
                    throw new AirlockInterruptedException("interrupted while streaming " + what + "; the cell is interrupted", null);
                }
                JsonNode n;
                try {
                    n = Json.MAPPER.readTree(line);
                } catch (JacksonException e) {
                    throw Errors.unreadable(response.statusCode(), what, "a stream line is not JSON (" + e.getOriginalMessage() + ")");
                }
                String type = n.path("type").isString() ? n.path("type").stringValue() : "";
                switch (type) {
                    case "stdout" -> handler.stdout(n.path("data").asString(""));
                    case "stderr" -> handler.stderr(n.path("data").asString(""));
                    case "output" -> handler.output(Transport.parse(n.path("output"), Json::cellOutput, response.statusCode(), what));
                    case "result" -> {
                        return Transport.parse(n.path("result"), Json::cell, response.statusCode(), what);
                    }
                    default -> {
                        // heartbeats, errors (they come again in the result) and types of newer servers
                    }
                }
            }
            throw Errors.unreadable(response.statusCode(), what, "the stream ended before its result line");
        } catch (IOException e) {
            throw transport.broken(what, e);
        }
    }

    /** The context as it is now: ready, busy or dead. */
    public InterpreterInfo info() {
        String mine = id();
        return transport.json("GET", path(), null, false, Json::contexts).stream().filter(c -> c.id().equals(mine)).findFirst()
                .orElseThrow(() -> new NotFoundException(404, "not_found", "interpreter context " + mine + " of sandbox " + sandbox
                        + " no longer exists", null, null));
    }

    /** Gives the context a fresh kernel: its variables are gone, the sandbox's files stay. The way out of a dead kernel. */
    public InterpreterInfo restart() {
        return transport.json("POST", path(id(), "restart"), null, true, Json::context);
    }

    /** Ends the context and its kernel. */
    public void delete() {
        transport.noContent("DELETE", path(id()), null);
    }

    private static ObjectNode body(String code, Duration timeout) {
        ObjectNode body = Json.MAPPER.createObjectNode().put("code", code);
        if (timeout != null) {
            body.put("timeoutSeconds", timeout.toMillis() / 1000.0);
        }
        return body;
    }

    private String path(String... rest) {
        String[] segments = new String[4 + rest.length];
        segments[0] = "v1";
        segments[1] = "sandboxes";
        segments[2] = sandbox;
        segments[3] = "contexts";
        System.arraycopy(rest, 0, segments, 4, rest.length);
        return Transport.path(segments);
    }

    @Override
    public String toString() {
        return "Interpreter[" + sandbox + "/" + id + "]";
    }
}
