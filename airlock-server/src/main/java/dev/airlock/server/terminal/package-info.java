/** The WebSocket on the pseudo-terminal of a background process: input, resize, output as it comes, the exit. Handed to the REST door as a plain Jetty listener by the Attach command. */
package dev.airlock.server.terminal;
