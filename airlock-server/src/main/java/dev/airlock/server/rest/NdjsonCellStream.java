package dev.airlock.server.rest;

import dev.airlock.server.command.CellResult;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.wire.Json;
import tools.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * Streams one cell as NDJSON: a line per stream chunk ({@code stdout}, {@code stderr}), result or
 * display ({@code output}) and error as the kernel produces them, heartbeats while it is quiet,
 * then the cell's result ({@code result}). The cell runs on the request's thread; its outputs
 * arrive on the agent's reader thread, which must not wait for the client, so they are queued
 * (bounded: a cell keeps at most the sandbox's output limit) and written by a writer thread. If
 * the client goes away the cell is interrupted.
 */
final class NdjsonCellStream implements CellResult.Listener {

    private static final ObjectNode END = Json.object();

    private final LinkedBlockingQueue<ObjectNode> lines = new LinkedBlockingQueue<>();

    @Override
    public void stream(String name, String text) {
        lines.add(Json.object().put("type", name).put("data", text));
    }

    @Override
    public void output(CellResult.Output output) {
        lines.add(Json.object().put("type", "output").set("output", JsonViews.output(output)));
    }

    @Override
    public void error(CellResult.CellError error) {
        lines.add(Json.object().put("type", "error").set("error", JsonViews.error(error)));
    }

    /** Runs the cell with this stream as its listener and writes lines to {@code out} until its result. */
    CellResult run(Function<CellResult.Listener, CellResult> cell, OutputStream out) throws IOException {
        Thread runner = Thread.currentThread();
        IOException[] failed = new IOException[1];
        Thread writer = Thread.ofVirtual().name("airlock-cell-stream").start(() -> {
            try {
                while (true) {
                    ObjectNode line = lines.poll(NdjsonExecStream.HEARTBEAT.toMillis(), TimeUnit.MILLISECONDS);
                    if (line == END) {
                        return;
                    }
                    write(out, line == null ? Json.object().put("type", "heartbeat") : line);
                }
            } catch (IOException e) {
                failed[0] = e;
                runner.interrupt(); // the client went away: interrupt the cell
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        CellResult result;
        try {
            result = cell.apply(this);
        } finally {
            lines.add(END);
            try {
                writer.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (failed[0] != null) {
            Thread.interrupted();
            throw failed[0];
        }
        write(out, Json.object().put("type", "result").set("result", JsonViews.cell(result)));
        return result;
    }

    private static void write(OutputStream out, ObjectNode line) throws IOException {
        out.write((line.toString() + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}
