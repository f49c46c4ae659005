package dev.airlock.client;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * What a one-shot {@link Airlock#run(Run)} gave back: the execution's result, and the files the
 * code left in {@code /workspace/output}. The server returns the content of at most 8 files of at
 * most 1 MiB each and looks at most at 200 entries of that tree; any other file is listed with
 * the reason it did not come back (docs/rest-api.md).
 *
 * @param execution how the code ran: output, exit code, end reason
 * @param outputs   the files under {@code /workspace/output}, breadth first in path order; empty
 *                  when the run was cancelled
 */
public record RunResult(ExecResult execution, List<Output> outputs) {

    public RunResult {
        Objects.requireNonNull(execution, "execution");
        outputs = outputs == null ? List.of() : List.copyOf(outputs);
    }

    public String stdout() {
        return execution.stdout();
    }

    public String stderr() {
        return execution.stderr();
    }

    /** The exit code; see {@link ExecResult#exitCode()}. */
    public int exitCode() {
        return execution.exitCode();
    }

    public EndReason endReason() {
        return execution.endReason();
    }

    /** The code ran to its end and exited with code 0. */
    public boolean succeeded() {
        return execution.succeeded();
    }

    /** The output file at {@code path}, absolute (such as {@code /workspace/output/result.txt}), if the run left one. */
    public Optional<Output> output(String path) {
        return outputs.stream().filter(o -> o.path().equals(path)).findFirst();
    }

    /**
     * One file the code left in {@code /workspace/output}.
     *
     * @param path        its absolute path in the sandbox, such as {@code /workspace/output/result.txt}
     * @param size        its size in bytes
     * @param content     its bytes; null when not returned
     * @param notReturned why its content did not come back (too large, too many files); null when returned
     */
    public record Output(String path, long size, byte[] content, String notReturned) {

        public Output {
            Objects.requireNonNull(path, "path");
            if ((content == null) == (notReturned == null)) {
                throw new IllegalArgumentException("output " + Errors.sanitize(path, 80) + " needs either its content or why it was not returned");
            }
            content = content == null ? null : content.clone();
        }

        /** Whether its content came back. */
        public boolean returned() {
            return content != null;
        }

        /** A copy of its bytes; null when not returned. */
        @Override
        public byte[] content() {
            return content == null ? null : content.clone();
        }

        /** Its content decoded as UTF-8 (invalid bytes replaced); null when not returned. */
        public String text() {
            return content == null ? null : new String(content, StandardCharsets.UTF_8);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Output other && path.equals(other.path) && size == other.size
                    && Arrays.equals(content, other.content) && Objects.equals(notReturned, other.notReturned);
        }

        @Override
        public int hashCode() {
            return Objects.hash(path, size, Arrays.hashCode(content), notReturned);
        }

        @Override
        public String toString() {
            return "Output[" + path + ", " + size + " bytes" + (content == null ? ", not returned: " + notReturned : "") + "]";
        }
    }
}
