package dev.airlock.server.files;

import dev.airlock.core.AirlockException;
import dev.airlock.core.AirlockException.Kind;
import dev.airlock.core.Limits;
import dev.airlock.core.Printable;
import dev.airlock.core.SandboxAgent;
import dev.airlock.core.SandboxAgent.FileInfo;
import dev.airlock.server.audit.Audit;
import dev.airlock.server.audit.AuditLog;
import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.command.Command;
import dev.airlock.server.live.ManagedSandbox;
import dev.airlock.server.output.CountingOutputStream;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Carries out the file commands: every path is resolved by the agent, inside the sandbox, within
 * the sandbox's file size limit; each operation is recorded (the path only as a digest), and the
 * agent's errno is mapped to the refusal a client can act on.
 */
public final class FileCommands {

    private final AuditLog audit;

    public FileCommands(AuditLog audit) {
        this.audit = audit;
    }

    public FileInfo write(ManagedSandbox s, Command.WriteFile w) {
        long max = s.sandbox().spec().limits().fileSizeBytes();
        return files(s, "write", w.path(), agent -> {
            agent.writeFile(w.path(), w.content(), max, 0644);
            return agent.stat(w.path());
        });
    }

    public void read(ManagedSandbox s, Command.ReadFile r) {
        long max = s.sandbox().spec().limits().fileSizeBytes();
        CountingOutputStream counted = new CountingOutputStream(r.sink());
        files(s, "read", r.path(), agent -> {
            agent.readFile(r.path(), max, counted);
            return counted;
        });
    }

    public FileInfo stat(ManagedSandbox s, String path) {
        return files(s, "stat", path, agent -> agent.stat(path));
    }

    public List<FileInfo> list(ManagedSandbox s, String path) {
        return files(s, "list", path, agent -> agent.list(path));
    }

    public FileInfo mkdir(ManagedSandbox s, Command.Mkdir m) {
        return files(s, "mkdir", m.path(), agent -> {
            agent.mkdir(m.path(), m.parents());
            return agent.stat(m.path());
        });
    }

    public void remove(ManagedSandbox s, Command.Remove r) {
        files(s, "remove", r.path(), agent -> {
            agent.remove(r.path(), r.recursive());
            return null;
        });
    }

    public FileInfo rename(ManagedSandbox s, Command.Rename r) {
        requireAbsolute(r.to());
        return files(s, "rename", r.from(), agent -> {
            agent.rename(r.from(), r.to());
            return agent.stat(r.to());
        });
    }

    @FunctionalInterface
    private interface FileOperation<T> {
        T apply(SandboxAgent agent) throws IOException;
    }

    private static void requireAbsolute(String path) {
        if (path == null || !path.startsWith("/")) {
            throw AirlockException.invalid("path '" + Printable.of(path) + "' must be an absolute path inside the sandbox, such as /workspace/data.csv");
        }
    }

    private <T> T files(ManagedSandbox s, String operation, String path, FileOperation<T> op) {
        requireAbsolute(path);
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("operation", operation);
        d.put("pathDigest", Audit.digest(path));
        try {
            T result = mapErrors(s, path, op);
            if (result instanceof FileInfo f && operation.equals("write")) {
                d.put("bytes", f.size());
            } else if (result instanceof CountingOutputStream c) {
                d.put("bytes", c.count);
            } else if (result instanceof List<?> l) {
                d.put("entries", l.size());
            }
            d.put("outcome", "ok");
            audit.record(AuditRecord.FILE, s.id(), d);
            return result instanceof CountingOutputStream ? null : result;
        } catch (RuntimeException e) {
            d.put("outcome", "error");
            d.put("error", e instanceof AirlockException ae ? ae.kind().name().toLowerCase(Locale.ROOT) : e.getClass().getSimpleName());
            audit.record(AuditRecord.FILE, s.id(), d);
            throw e;
        }
    }

    private static <T> T mapErrors(ManagedSandbox s, String path, FileOperation<T> op) {
        try {
            return op.apply(s.sandbox().files());
        } catch (SandboxAgent.FileTooLargeException e) {
            throw new AirlockException(Kind.TOO_LARGE, e.getMessage() + ": the sandbox's file size limit is "
                    + Limits.formatBytes(s.sandbox().spec().limits().fileSizeBytes()));
        } catch (SandboxAgent.FileOperationException e) {
            Kind kind = switch (e.errno()) {
                case "ENOENT" -> Kind.NOT_FOUND;
                case "EEXIST", "ENOTEMPTY" -> Kind.CONFLICT;
                case "EFBIG" -> Kind.TOO_LARGE;
                default -> Kind.INVALID_ARGUMENT;
            };
            throw new AirlockException(kind, e.getMessage());
        } catch (IOException e) {
            if (!s.sandbox().isOpen()) {
                throw new AirlockException(Kind.CONFLICT, "sandbox " + s.id() + " was destroyed during the file operation");
            }
            throw new AirlockException(Kind.INTERNAL, "file operation on " + Printable.of(path) + " failed: " + e.getMessage(), e);
        }
    }
}
