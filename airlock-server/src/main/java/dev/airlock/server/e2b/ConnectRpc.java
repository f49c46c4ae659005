package dev.airlock.server.e2b;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.server.wire.Json;
import jakarta.servlet.http.HttpServletResponse;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The Connect protocol with the JSON codec, as envd's clients speak it (connectrpc.com/docs/protocol):
 * a unary call is a JSON body answered by a JSON body, an error by an HTTP status with
 * {@code {"code": "not_found", "message": ...}}; a server stream's request and each of its answers
 * are enveloped (one flags byte, a 4-byte big-endian length, the message), and the stream ends with
 * an end-of-stream envelope (flags 0x02) holding the error, if any.
 */
final class ConnectRpc {

    /** Content type of a unary call with the JSON codec. */
    static final String UNARY = "application/json";
    /** Content type of a streaming call with the JSON codec. */
    static final String STREAM = "application/connect+json";
    /** The most a request message may hold: envd's requests are a command line, a path, a selector. */
    static final int MAX_REQUEST = 1 << 20;
    private static final int END_STREAM = 0x02;
    private static final int COMPRESSED = 0x01;

    private ConnectRpc() {
    }

    /** The one message of a streaming call's request body: exactly one envelope, uncompressed, within {@link #MAX_REQUEST}. */
    static byte[] unwrap(byte[] body) {
        if (body.length < 5) {
            throw AirlockException.invalid("a streaming Connect request is one enveloped message (5 bytes of header, then the message):"
                    + " this body has " + body.length + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(body);
        int flags = b.get() & 0xff;
        long length = b.getInt() & 0xffffffffL;
        if ((flags & COMPRESSED) != 0) {
            throw AirlockException.invalid("compressed Connect messages are not accepted: send them uncompressed (no Connect-Content-Encoding)");
        }
        if (flags != 0) {
            throw AirlockException.invalid("a Connect request envelope has flags 0, not " + flags);
        }
        if (length != body.length - 5L) {
            throw AirlockException.invalid("the Connect envelope says " + length + " bytes, and " + (body.length - 5) + " follow it:"
                    + " a request holds exactly one message");
        }
        byte[] message = new byte[(int) length];
        b.get(message);
        return message;
    }

    /** Parses one request message, a JSON object. */
    static JsonNode message(byte[] bytes) {
        JsonNode node;
        try {
            node = bytes.length == 0 ? Json.object() : Json.MAPPER.readTree(bytes);
        } catch (tools.jackson.core.JacksonException e) {
            throw AirlockException.invalid("the Connect message is not valid JSON: " + Json.printable(e.getOriginalMessage()));
        }
        if (node == null || !node.isObject()) {
            throw AirlockException.invalid("a Connect message is a JSON object");
        }
        return node;
    }

    /** Writes one message of a server stream and flushes it, so the client sees it at once. */
    static void send(OutputStream out, ObjectNode message) throws IOException {
        envelope(out, 0, message.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** Ends a server stream: with {@code error}, or cleanly when it is null. */
    static void end(OutputStream out, AirlockException error) throws IOException {
        ObjectNode end = Json.object();
        if (error != null) {
            end.set("error", error(error));
        }
        envelope(out, END_STREAM, end.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static void envelope(OutputStream out, int flags, byte[] message) throws IOException {
        byte[] header = ByteBuffer.allocate(5).put((byte) flags).putInt(message.length).array();
        out.write(header);
        out.write(message);
        out.flush();
    }

    /** A refusal answered with Connect's {@code already_exists} (MakeDir of a path that is there). */
    static AirlockException alreadyExists(String message) {
        return new AlreadyExists(message);
    }

    static final class AlreadyExists extends AirlockException {
        AlreadyExists(String message) {
            super(Kind.CONFLICT, message);
        }
    }

    /** Answers a unary call that failed. */
    static void fail(HttpServletResponse resp, AirlockException e) throws IOException {
        resp.setStatus(e instanceof E2bDoor.Unsupported ? 501 : e instanceof AlreadyExists ? 409 : status(e.kind()));
        resp.setContentType(UNARY);
        resp.getOutputStream().write(error(e).toString().getBytes(StandardCharsets.UTF_8));
    }

    /** A Connect error: its code, the message, and a refusal's control and rule as Airlock names them. */
    static ObjectNode error(AirlockException e) {
        String code = e instanceof E2bDoor.Unsupported ? "unimplemented" : e instanceof AlreadyExists ? "already_exists" : code(e.kind());
        return Json.object().put("code", code)
                .put("message", E2bDoor.message(e));
    }

    static String code(Kind kind) {
        return switch (kind) {
            case INVALID_ARGUMENT -> "invalid_argument";
            case NOT_FOUND -> "not_found";
            case CONFLICT -> "failed_precondition";
            case PERMISSION_DENIED -> "permission_denied";
            case LIMIT_EXCEEDED -> "resource_exhausted";
            case TOO_LARGE -> "resource_exhausted";
            case GONE -> "not_found";
            case UNAVAILABLE -> "unavailable";
            case INTERNAL -> "internal";
        };
    }

    /** The HTTP status of a unary error, as Connect maps its codes. */
    static int status(Kind kind) {
        return switch (kind) {
            case INVALID_ARGUMENT, CONFLICT -> 400;
            case NOT_FOUND -> 404;
            case PERMISSION_DENIED -> 403;
            case LIMIT_EXCEEDED, TOO_LARGE -> 429;
            case GONE -> 404;
            case UNAVAILABLE -> 503;
            case INTERNAL -> 500;
        };
    }
}
