package dev.airlock.core;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The languages a one-shot run understands: how the code is stored in the sandbox and which
 * interpreter runs it. The code is written to a file rather than passed on the command line, so
 * that its size is bounded by the sandbox's disk, not by the kernel's argument limit.
 */
public enum Language {
    PYTHON("python", "python3", "main.py"),
    JAVASCRIPT("javascript", "node", "main.js"),
    BASH("bash", "bash", "main.sh"),
    SH("sh", "sh", "main.sh"),
    JAVA("java", "java", "Main.java");

    /** Where the code file is placed inside the sandbox. */
    public static final String CODE_DIR = "/tmp/airlock";

    private final String id;
    private final String interpreter;
    private final String fileName;

    Language(String id, String interpreter, String fileName) {
        this.id = id;
        this.interpreter = interpreter;
        this.fileName = fileName;
    }

    public String id() {
        return id;
    }

    /** The executable the image must provide, looked up on the sandbox's PATH. */
    public String interpreter() {
        return interpreter;
    }

    public String codePath() {
        return CODE_DIR + "/" + fileName;
    }

    /** The command line that runs the code file. */
    public List<String> command() {
        return List.of(interpreter, codePath());
    }

    public static Language parse(String name) {
        String n = name == null ? "" : name.trim().toLowerCase(Locale.ROOT);
        for (Language l : values()) {
            if (l.id.equals(n)) {
                return l;
            }
        }
        switch (n) {
            case "python3", "py" -> { return PYTHON; }
            case "js", "node", "nodejs" -> { return JAVASCRIPT; }
            default -> { }
        }
        throw AirlockException.invalid("unknown language '" + Printable.of(name) + "': choose one of " + names());
    }

    public static String names() {
        return Arrays.stream(values()).map(Language::id).collect(Collectors.joining(", "));
    }
}
