/**
 * Output kept on the host: a background process's streams spilled to files within a bound, the
 * files a one-shot run collected ({@code /workspace/output}), and bounded sinks. Uses only wire.
 */
package dev.airlock.server.output;
