package dev.airlock.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.spi.ContextAwareBase;
import org.slf4j.Logger;

/**
 * The CLI's logging, configured in code (found by logback as a service) rather than by a
 * logback.xml: reading XML loads logback's Joran and the JDK's XML parser, a good part of a
 * one-shot {@code airlock run}'s start. The CLI's stdout belongs to the sandboxed program (or to
 * JSON), so logs go to stderr, at {@code AIRLOCK_LOG_LEVEL} (default WARN).
 */
public final class CliLogging extends ContextAwareBase implements Configurator {

    static final String PATTERN = "airlock: %level %logger{0}: %msg%n";

    @Override
    public ExecutionStatus configure(LoggerContext context) {
        PatternLayoutEncoder encoder = new PatternLayoutEncoder();
        encoder.setContext(context);
        encoder.setPattern(PATTERN);
        encoder.start();
        ConsoleAppender<ILoggingEvent> appender = new ConsoleAppender<>();
        appender.setContext(context);
        appender.setName("STDERR");
        appender.setTarget("System.err");
        appender.setEncoder(encoder);
        appender.start();
        ch.qos.logback.classic.Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.toLevel(System.getenv("AIRLOCK_LOG_LEVEL"), Level.WARN));
        root.addAppender(appender);
        return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
    }
}
