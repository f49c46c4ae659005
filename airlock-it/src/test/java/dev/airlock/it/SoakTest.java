package dev.airlock.it;

import dev.airlock.client.Exec;
import dev.airlock.client.ExecResult;
import dev.airlock.client.RemoteSandbox;
import dev.airlock.client.SandboxSpec;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.ToLongFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Create, exec, destroy, over and over (REST each cycle, an MCP session every fifth): after a
 * warm-up, a window of measurements at the start is compared with one at the end. Heap after GC,
 * file descriptors, threads and audit rows per cycle must not grow beyond small constants, and no
 * sandbox may leave anything on the host. The short version runs by default; {@code
 * -Dairlock.long=true} runs 5,000 cycles.
 */
class SoakTest {

    private static final int CYCLES = LoadTest.LONG ? 5000 : 100;
    private static final int WARM_UP = LoadTest.LONG ? 200 : 20;
    /** Cycles measured at the start and at the end; a multiple of {@link #MCP_EVERY}, so both windows do the same work. */
    private static final int WINDOW = LoadTest.LONG ? 50 : 10;
    private static final int MCP_EVERY = 5;

    /** Heap the end may hold beyond the start: GC noise, not a leak (a 1 KiB leak per cycle crosses it in the long run). */
    private static final long HEAP_SLACK = 8L << 20;
    private static final int FD_SLACK = 4;
    private static final int THREAD_SLACK = 4;
    /** Audit rows per cycle the end may write beyond the start's rate. */
    private static final double AUDIT_RATE_SLACK = 0.5;
    /** A cycle's audit rows (request, authorization, lifecycle, execution, for REST and MCP) stay under this. */
    private static final double MAX_AUDIT_ROWS_PER_CYCLE = 40;

    private static LiveServer live;

    @BeforeAll
    static void startServer() {
        // No warm pool: between cycles no sandbox exists, so anything on the host is a leftover.
        live = LiveServer.start(c -> c.withPoolSize(0).withMaxSandboxes(4));
    }

    @AfterAll
    static void closeServerAndCheckNothingLeaked() {
        if (live != null) {
            live.close();
        }
    }

    @Test
    void createExecDestroyCyclesGrowNeitherHeapNorFileDescriptorsNorThreadsNorAuditRowsPerCycle() throws Exception {
        Path db = live.dataDir.resolve("airlock.db");
        List<ProcessGauges> start = new ArrayList<>();
        List<ProcessGauges> end = new ArrayList<>();
        long startRows = 0;
        long endRows = 0;
        long began = System.nanoTime();
        try (McpLoadClient mcp = new McpLoadClient(live.uri(), live.token(), Duration.ofSeconds(60))) {
            for (int cycle = 0; cycle < CYCLES; cycle++) {
                cycle(cycle, mcp);
                boolean inStart = cycle >= WARM_UP && cycle < WARM_UP + WINDOW;
                boolean inEnd = cycle >= CYCLES - WINDOW;
                if (cycle == WARM_UP - 1 || cycle == CYCLES - WINDOW - 1) {
                    long rows = flushedAuditRows(db);
                    if (cycle == WARM_UP - 1) {
                        startRows = rows;
                    } else {
                        endRows = rows;
                    }
                }
                if (cycle == WARM_UP + WINDOW - 1 || cycle == CYCLES - 1) {
                    assertThat(LiveServer.leftovers(live.sandboxPrefix)).as("left on the host after cycle %d", cycle).isEmpty();
                }
                if (inStart || inEnd) {
                    flushedAuditRows(db);
                    (inStart ? start : end).add(ProcessGauges.measure(db));
                }
                if (LoadTest.LONG && cycle % 500 == 0) {
                    System.out.printf("soak: cycle %d after %d s%n", cycle, (System.nanoTime() - began) / 1_000_000_000L);
                }
            }
        }
        double startRate = (start.getLast().auditRows() - startRows) / (double) WINDOW;
        double endRate = (end.getLast().auditRows() - endRows) / (double) WINDOW;
        System.out.printf("soak: %d cycles in %d s%n  start window: heap %s MiB, fds %s, threads %s, audit rows/cycle %.2f%n"
                        + "  end window:   heap %s MiB, fds %s, threads %s, audit rows/cycle %.2f%n",
                CYCLES, (System.nanoTime() - began) / 1_000_000_000L,
                median(start, ProcessGauges::heapAfterGc) >> 20, median(start, ProcessGauges::fileDescriptors),
                median(start, ProcessGauges::threads), startRate,
                median(end, ProcessGauges::heapAfterGc) >> 20, median(end, ProcessGauges::fileDescriptors),
                median(end, ProcessGauges::threads), endRate);

        assertThat(median(end, ProcessGauges::heapAfterGc)).as("heap after GC at the end (start: %d)", median(start, ProcessGauges::heapAfterGc))
                .isLessThanOrEqualTo(median(start, ProcessGauges::heapAfterGc) + HEAP_SLACK);
        assertThat(max(end, ProcessGauges::fileDescriptors)).as("open file descriptors at the end")
                .isLessThanOrEqualTo(max(start, ProcessGauges::fileDescriptors) + FD_SLACK);
        assertThat(max(end, ProcessGauges::threads)).as("platform threads at the end")
                .isLessThanOrEqualTo(max(start, ProcessGauges::threads) + THREAD_SLACK);
        assertThat(startRate).as("audit rows per cycle").isPositive().isLessThanOrEqualTo(MAX_AUDIT_ROWS_PER_CYCLE);
        assertThat(endRate).as("audit rows per cycle at the end").isLessThanOrEqualTo(startRate + AUDIT_RATE_SLACK);
        assertThat(live.client.list()).as("sandboxes alive after the soak").isEmpty();
    }

    /** One cycle over REST, and every fifth also one over MCP in the same long-lived session. */
    private static void cycle(int cycle, McpLoadClient mcp) {
        try (RemoteSandbox sandbox = live.client.create(SandboxSpec.builder().label("soak", "yes").build())) {
            ExecResult r = sandbox.exec(Exec.command("sh", "-c", "echo cycle " + cycle));
            assertThat(r.stdout()).as("cycle %d", cycle).isEqualTo("cycle " + cycle + "\n");
        }
        if (cycle % MCP_EVERY == 0) {
            String id = mcp.create(300);
            assertThat(mcp.exec(id, List.of("echo", "mcp " + cycle)).get("stdout")).isEqualTo("mcp " + cycle + "\n");
            mcp.destroy(id);
        }
    }

    private static long flushedAuditRows(Path db) throws InterruptedException {
        assertThat(live.server.audit().flush(10_000)).as("audit writer caught up").isTrue();
        return ProcessGauges.auditRows(db);
    }

    private static long median(List<ProcessGauges> window, ToLongFunction<ProcessGauges> gauge) {
        List<Long> values = new ArrayList<>(window.stream().map(gauge::applyAsLong).toList());
        values.sort(Comparator.naturalOrder());
        return values.get(values.size() / 2);
    }

    private static long max(List<ProcessGauges> window, ToLongFunction<ProcessGauges> gauge) {
        return window.stream().mapToLong(gauge).max().orElseThrow();
    }
}
