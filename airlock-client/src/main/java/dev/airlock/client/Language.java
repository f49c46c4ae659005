package dev.airlock.client;

/**
 * A language the server can run from source with {@link RemoteSandbox#run(Language, String)}: the
 * code is stored as a file in the sandbox and started with the language's interpreter, so its size
 * is not bounded by the kernel's argument limit.
 */
public enum Language {
    PYTHON("python"),
    JAVASCRIPT("javascript"),
    BASH("bash"),
    SH("sh"),
    /** Single-file source launch ({@code java Main.java}). */
    JAVA("java");

    private final String id;

    Language(String id) {
        this.id = id;
    }

    /** The name on the wire, such as {@code python}. */
    public String id() {
        return id;
    }
}
