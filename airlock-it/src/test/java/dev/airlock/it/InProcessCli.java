package dev.airlock.it;

import dev.airlock.cli.AirlockCli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * One run of the CLI in this JVM ({@link AirlockCli#execute}), with what it printed: for the tests of
 * its commands that talk to a live server. One at a time: standard output and error are the JVM's.
 */
record InProcessCli(int exit, String out, String err) {

    static synchronized InProcessCli run(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
            int exit = AirlockCli.execute(args);
            return new InProcessCli(exit, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }
}
