package dev.airlock.server.rest;

import dev.airlock.core.ExecResult;
import dev.airlock.core.Execution;
import dev.airlock.core.OutputListener;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Function;

/**
 * Streams one execution as NDJSON: a line per output chunk as it is produced, then the result.
 * Output arrives on the agent's reader thread, which must never wait for a slow HTTP client (it
 * serves every execution of the sandbox), so chunks are queued — bounded, since the execution's
 * output cap applies before them — and written by the request's own thread. If the client goes
 * away, the execution is cancelled.
 */
final class NdjsonExecStream implements OutputListener {

    private sealed interface Event permits Chunk, End {
    }

    private record Chunk(String type, byte[] bytes) implements Event {
    }

    private record End(ExecResult result) implements Event {
    }

    /** How long a stream may stay silent before a heartbeat line is written. */
    static final java.time.Duration HEARTBEAT = java.time.Duration.ofSeconds(2);

    private final LinkedBlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final CharsetDecoder stdoutDecoder = decoder();
    private final CharsetDecoder stderrDecoder = decoder();
    private ByteBuffer stdoutRest = ByteBuffer.allocate(0);
    private ByteBuffer stderrRest = ByteBuffer.allocate(0);

    @Override
    public void stdout(byte[] chunk) {
        events.add(new Chunk("stdout", chunk));
    }

    @Override
    public void stderr(byte[] chunk) {
        events.add(new Chunk("stderr", chunk));
    }

    /**
     * Runs {@code start} with this stream as listener, waits for the end on a virtual thread, and
     * writes events to {@code out} until the result line. Returns the result.
     */
    ExecResult run(Function<OutputListener, Execution> start, OutputStream out) throws IOException {
        Execution execution = start.apply(this);
        Thread waiter = Thread.ofVirtual().name("airlock-exec-stream").start(() -> events.add(new End(execution.await())));
        try {
            while (true) {
                Event e = events.poll(HEARTBEAT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
                if (e == null) {
                    // A quiet process: a heartbeat line is how a client that went away is noticed,
                    // since only a write to its connection can fail.
                    line(out, Json.object().put("type", "heartbeat"));
                    continue;
                }
                switch (e) {
                    case Chunk c -> {
                        String text = decode(c);
                        if (!text.isEmpty()) {
                            line(out, Json.object().put("type", c.type()).put("data", text));
                        }
                    }
                    case End end -> {
                        // An incomplete character left at the very end is replaced, as in the result.
                        for (String type : new String[] {"stdout", "stderr"}) {
                            String rest = finish(type.equals("stdout"));
                            if (!rest.isEmpty()) {
                                line(out, Json.object().put("type", type).put("data", rest));
                            }
                        }
                        ObjectNode result = Json.result(end.result());
                        result.put("type", "result");
                        line(out, result);
                        return end.result();
                    }
                }
            }
        } catch (IOException | InterruptedException e) {
            // The client went away (or the server is stopping): nobody will read the output.
            waiter.interrupt();
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            throw e instanceof IOException io ? io : new IOException("interrupted", e);
        }
    }

    private static void line(OutputStream out, ObjectNode node) throws IOException {
        out.write(node.toString().getBytes(StandardCharsets.UTF_8));
        out.write('\n');
        out.flush();
    }

    /** Decodes UTF-8 across chunk boundaries: a sequence split between chunks is kept for the next. */
    private String decode(Chunk c) {
        boolean isOut = c.type().equals("stdout");
        ByteBuffer rest = isOut ? stdoutRest : stderrRest;
        ByteBuffer in = ByteBuffer.allocate(rest.remaining() + c.bytes().length).put(rest).put(c.bytes()).flip();
        CharBuffer chars = CharBuffer.allocate(in.remaining() + 1);
        (isOut ? stdoutDecoder : stderrDecoder).decode(in, chars, false);
        ByteBuffer left = ByteBuffer.allocate(in.remaining()).put(in).flip();
        if (isOut) {
            stdoutRest = left;
        } else {
            stderrRest = left;
        }
        return chars.flip().toString();
    }

    /** Decodes what is left of one stream at its end: an incomplete sequence becomes U+FFFD. */
    private String finish(boolean isOut) {
        ByteBuffer rest = isOut ? stdoutRest : stderrRest;
        if (!rest.hasRemaining()) {
            return "";
        }
        CharsetDecoder decoder = isOut ? stdoutDecoder : stderrDecoder;
        CharBuffer chars = CharBuffer.allocate(2 * rest.remaining() + 2);
        decoder.decode(rest, chars, true);
        decoder.flush(chars);
        if (isOut) {
            stdoutRest = ByteBuffer.allocate(0);
        } else {
            stderrRest = ByteBuffer.allocate(0);
        }
        return chars.flip().toString();
    }

    private static CharsetDecoder decoder() {
        return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
    }
}
