package dev.airlock.server.rest;

import dev.airlock.server.command.CellResult;
import dev.airlock.server.http.JsonViews;
import dev.airlock.server.http.LineStream;
import dev.airlock.server.wire.Json;

import java.io.IOException;
import java.io.OutputStream;
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

    private final LineStream lines = new LineStream(Json.object().put("type", "heartbeat"));

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
        CellResult result = lines.run(out, () -> cell.apply(this));
        LineStream.write(out, Json.object().put("type", "result").set("result", JsonViews.cell(result)));
        return result;
    }
}
