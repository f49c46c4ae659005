package dev.airlock.agent;

import dev.airlock.core.AirlockException;
import dev.airlock.core.SeccompAllowList;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The shared seccomp allow-list ({@link SeccompAllowList}, the one the OCI driver hands to runc)
 * compiled to a classic BPF program for an x86_64 kernel, which the installer (the microVM's guest
 * init, or Airlock's own container runtime, airlock-launch) loads with no_new_privs and {@code
 * SECCOMP_SET_MODE_FILTER} just before it executes the agent, so the agent and everything it starts
 * run under it, as under runc.
 *
 * <p>The program does what libseccomp makes of the profile for runc with only the native
 * architecture listed: a call of another architecture (i386 through {@code int 0x80}) or of the x32
 * ABI (numbers with bit 30 set) kills the process (SIGSYS); a listed call whose rule's argument
 * conditions hold (all of them, on the full 64-bit argument) gets the rule's action, the first
 * such rule of the name in the file's order; anything else gets the profile's default action
 * (EPERM). Names come from the x86_64 system call table generated at build time from the kernel
 * headers ({@code syscalls-x86_64.txt}); a name the table does not have (a call newer than the
 * headers, so newer than the guest kernel built against the same Debian release) is left out, so refused.
 */
public final class SeccompFilter {

    private static final String TABLE_RESOURCE = "syscalls-x86_64.txt";

    // classic BPF opcodes
    private static final int LD_W_ABS = 0x20;
    private static final int JEQ_K = 0x15;
    private static final int JGE_K = 0x35;
    private static final int AND_K = 0x54;
    private static final int RET_K = 0x06;

    // struct seccomp_data
    private static final int NR = 0;
    private static final int ARCH = 4;
    private static final int ARGS = 16;

    private static final int AUDIT_ARCH_X86_64 = 0xC000003E;
    private static final int X32_SYSCALL_BIT = 0x40000000;
    static final int RET_KILL_PROCESS = 0x80000000;
    static final int RET_ERRNO = 0x00050000;
    static final int RET_ALLOW = 0x7FFF0000;

    /** One instruction, as struct sock_filter. */
    record Insn(int code, int jt, int jf, int k) {
    }

    private SeccompFilter() {
    }

    /** The allow-list's program as its installers read it: struct sock_filter entries, 8 bytes each, little-endian. */
    public static byte[] compile() {
        return bytes(program());
    }

    /**
     * {@code profile} (an OCI {@code linux.seccomp} section made from the allow-list, as runc is
     * given it) compiled the same way. Only x86_64 programs are made: a profile naming another
     * architecture is refused.
     */
    public static byte[] compile(JsonNode profile) {
        for (JsonNode arch : profile.path("architectures")) {
            if (!"SCMP_ARCH_X86_64".equals(arch.asString())) {
                throw AirlockException.unavailable("Airlock's seccomp compiler makes x86_64 programs only, and this profile is for "
                        + arch.asString() + ": use runc (--runtime runc) on this host");
            }
        }
        return bytes(program(profile));
    }

    private static byte[] bytes(List<Insn> program) {
        ByteBuffer out = ByteBuffer.allocate(program.size() * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (Insn i : program) {
            out.putShort((short) i.code()).put((byte) i.jt()).put((byte) i.jf()).putInt(i.k());
        }
        return out.array();
    }

    /** The allow-list's program's instructions. */
    static List<Insn> program() {
        JsonNode profile;
        try (InputStream in = SeccompAllowList.open()) {
            profile = JsonMapper.builder().build().readTree(in);
        } catch (IOException e) {
            throw AirlockException.internal("cannot load the seccomp allow-list: " + e.getMessage(), e);
        }
        return program(profile);
    }

    static List<Insn> program(JsonNode profile) {
        Map<String, Integer> numbers = table();
        int defaultAction = action(profile.get("defaultAction").asString(), profile.path("defaultErrnoRet").asInt(1), "defaultAction");
        // each number's rules, in the file's order
        Map<Integer, List<JsonNode>> rules = new TreeMap<>();
        for (JsonNode rule : profile.get("syscalls")) {
            for (JsonNode name : rule.get("names")) {
                Integer nr = numbers.get(name.asString());
                if (nr != null) {
                    rules.computeIfAbsent(nr, n -> new ArrayList<>()).add(rule);
                }
            }
        }
        List<Insn> p = new ArrayList<>();
        p.add(new Insn(LD_W_ABS, 0, 0, ARCH));
        p.add(new Insn(JEQ_K, 1, 0, AUDIT_ARCH_X86_64));
        p.add(new Insn(RET_K, 0, 0, RET_KILL_PROCESS));
        p.add(new Insn(LD_W_ABS, 0, 0, NR));
        p.add(new Insn(JGE_K, 0, 1, X32_SYSCALL_BIT));
        p.add(new Insn(RET_K, 0, 0, RET_KILL_PROCESS));
        for (Map.Entry<Integer, List<JsonNode>> entry : rules.entrySet()) {
            List<Insn> block = block(entry.getValue(), defaultAction);
            if (block.size() > 255) {
                throw AirlockException.internal("the seccomp rules of system call " + entry.getKey() + " make a block too long to jump over", null);
            }
            p.add(new Insn(JEQ_K, 0, block.size(), entry.getKey()));
            p.addAll(block);
        }
        p.add(new Insn(RET_K, 0, 0, defaultAction));
        if (p.size() > 4096) {
            throw AirlockException.internal("the seccomp program has " + p.size() + " instructions, more than the kernel's 4096", null);
        }
        return p;
    }

    /**
     * One number's rules: each checks its conditions (any failing one jumps to the next rule) and
     * returns its action; after the last, the default action. Every path returns, so the
     * accumulator the conditions load never reaches the next number's comparison.
     */
    private static List<Insn> block(List<JsonNode> rules, int defaultAction) {
        List<Insn> block = new ArrayList<>();
        for (JsonNode rule : rules) {
            List<Insn> checks = new ArrayList<>();
            for (JsonNode condition : rule.path("args")) {
                checks.addAll(condition(condition));
            }
            int ret = checks.size();
            // a failed check (jf == -1 so far) jumps just past this rule's return
            for (int i = 0; i < checks.size(); i++) {
                Insn c = checks.get(i);
                if (c.jf() == -1) {
                    checks.set(i, new Insn(c.code(), c.jt(), ret - i, c.k()));
                }
            }
            block.addAll(checks);
            String where = "rule \"" + rule.path("comment").asString(rule.get("names").toString()) + "\"";
            block.add(new Insn(RET_K, 0, 0, action(rule.get("action").asString(), rule.path("errnoRet").asInt(1), where)));
        }
        block.add(new Insn(RET_K, 0, 0, defaultAction));
        return block;
    }

    /** Checks of one argument condition, on both 32-bit halves; jf == -1 marks "failed". */
    private static List<Insn> condition(JsonNode condition) {
        int offset = ARGS + 8 * condition.get("index").asInt();
        long value = condition.get("value").asLong();
        String op = condition.get("op").asString();
        List<Insn> c = new ArrayList<>();
        switch (op) {
            case "SCMP_CMP_EQ" -> {
                c.add(new Insn(LD_W_ABS, 0, 0, offset + 4));
                c.add(new Insn(JEQ_K, 0, -1, (int) (value >>> 32)));
                c.add(new Insn(LD_W_ABS, 0, 0, offset));
                c.add(new Insn(JEQ_K, 0, -1, (int) value));
            }
            case "SCMP_CMP_MASKED_EQ" -> {
                long want = condition.get("valueTwo").asLong();
                c.add(new Insn(LD_W_ABS, 0, 0, offset + 4));
                c.add(new Insn(AND_K, 0, 0, (int) (value >>> 32)));
                c.add(new Insn(JEQ_K, 0, -1, (int) (want >>> 32)));
                c.add(new Insn(LD_W_ABS, 0, 0, offset));
                c.add(new Insn(AND_K, 0, 0, (int) value));
                c.add(new Insn(JEQ_K, 0, -1, (int) want));
            }
            default -> throw AirlockException.internal("the seccomp allow-list uses the comparison " + op + ", which Airlock's"
                    + " compiler (SeccompFilter) does not know: it knows SCMP_CMP_EQ and SCMP_CMP_MASKED_EQ; teach it the new one", null);
        }
        return c;
    }

    private static int action(String action, int errno, String where) {
        return switch (action) {
            case "SCMP_ACT_ALLOW" -> RET_ALLOW;
            case "SCMP_ACT_ERRNO" -> RET_ERRNO | (errno & 0xFFFF);
            case "SCMP_ACT_KILL_PROCESS" -> RET_KILL_PROCESS;
            default -> throw AirlockException.internal("the seccomp allow-list's " + where + " has the action " + action
                    + ", which Airlock's compiler (SeccompFilter) does not know: it knows SCMP_ACT_ALLOW,"
                    + " SCMP_ACT_ERRNO and SCMP_ACT_KILL_PROCESS", null);
        };
    }

    /** The x86_64 system call table, name to number. */
    static Map<String, Integer> table() {
        Map<String, Integer> numbers = new HashMap<>();
        try (InputStream in = SeccompFilter.class.getResourceAsStream(TABLE_RESOURCE)) {
            if (in == null) {
                throw new IOException("resource " + TABLE_RESOURCE + " is missing from the class path: build airlock-agent"
                        + " with Maven, which generates it from the kernel headers (src/build/syscall-table.sh)");
            }
            for (String line : new String(in.readAllBytes(), StandardCharsets.US_ASCII).split("\n")) {
                String[] fields = line.trim().split(" ");
                if (fields.length == 2) {
                    numbers.put(fields[0], Integer.parseInt(fields[1]));
                }
            }
        } catch (IOException | NumberFormatException e) {
            throw AirlockException.internal("cannot read the x86_64 system call table: " + e.getMessage(), e);
        }
        return numbers;
    }
}
