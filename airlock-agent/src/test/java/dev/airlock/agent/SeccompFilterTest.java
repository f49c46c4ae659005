package dev.airlock.agent;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The compiled program, run by a small classic-BPF interpreter on seccomp_data: what it answers for
 * the allow-list's rules, the other architectures and the x32 ABI. The contract proves it in a guest
 * (MicroVmContractTest's SyscallFilter); this pins the compiler's own logic.
 */
class SeccompFilterTest {

    private static final int X86_64 = 0xC000003E;
    private static final int I386 = 0x40000003;
    private static final int EPERM = SeccompFilter.RET_ERRNO | 1;
    private static final List<SeccompFilter.Insn> PROGRAM = SeccompFilter.program();
    private static final Map<String, Integer> NR = SeccompFilter.table();

    @Test
    void listedCallsAreAllowedAndOthersRefusedWithEperm() {
        assertThat(run(X86_64, NR.get("read"))).isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, NR.get("execve"))).isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, NR.get("ptrace"))).isEqualTo(EPERM);
        assertThat(run(X86_64, NR.get("process_vm_readv"))).isEqualTo(EPERM);
        assertThat(run(X86_64, NR.get("mount"))).isEqualTo(EPERM);
        assertThat(run(X86_64, 1000)).isEqualTo(EPERM);
    }

    @Test
    void argumentConditionsAreCheckedOnAllSixtyFourBits() {
        int socket = NR.get("socket");
        assertThat(run(X86_64, socket, 1)).isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, socket, 2)).isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, socket, 10)).isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, socket, 16)).as("AF_NETLINK").isEqualTo(EPERM);
        assertThat(run(X86_64, socket, 17)).as("AF_PACKET").isEqualTo(EPERM);
        assertThat(run(X86_64, socket, (1L << 32) | 2)).as("high bits set").isEqualTo(EPERM);
        int personality = NR.get("personality");
        assertThat(run(X86_64, personality, 0xFFFFFFFFL)).isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, personality, 0x0040000)).isEqualTo(EPERM);
    }

    @Test
    void cloneWithANamespaceFlagIsRefusedAndClone3LooksUnimplemented() {
        int clone = NR.get("clone");
        assertThat(run(X86_64, clone, 0x01200011)).as("fork's flags").isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, clone, 0x003D0F00)).as("a thread's flags").isEqualTo(SeccompFilter.RET_ALLOW);
        assertThat(run(X86_64, clone, 0x10000000 | 17)).as("CLONE_NEWUSER").isEqualTo(EPERM);
        assertThat(run(X86_64, clone, 0x00020000 | 17)).as("CLONE_NEWNS").isEqualTo(EPERM);
        assertThat(run(X86_64, NR.get("clone3"))).isEqualTo(SeccompFilter.RET_ERRNO | 38);
    }

    @Test
    void otherArchitecturesAndTheX32AbiKillTheProcess() {
        assertThat(run(I386, 20)).isEqualTo(SeccompFilter.RET_KILL_PROCESS);
        assertThat(run(X86_64, 0x40000000 | 39)).isEqualTo(SeccompFilter.RET_KILL_PROCESS);
    }

    @Test
    void theProgramIsEightBytesAnInstruction() {
        assertThat(SeccompFilter.compile()).hasSize(PROGRAM.size() * 8);
    }

    /** Runs the program on a seccomp_data of {@code arch}, {@code nr} and the given arguments (the rest 0). */
    private static int run(int arch, int nr, long... args) {
        long[] a = new long[6];
        System.arraycopy(args, 0, a, 0, args.length);
        int acc = 0;
        for (int pc = 0; pc < PROGRAM.size(); pc++) {
            SeccompFilter.Insn i = PROGRAM.get(pc);
            switch (i.code()) {
                case 0x20 -> acc = load(i.k(), arch, nr, a);
                case 0x54 -> acc &= i.k();
                case 0x15 -> pc += acc == i.k() ? i.jt() : i.jf();
                case 0x35 -> pc += Integer.compareUnsigned(acc, i.k()) >= 0 ? i.jt() : i.jf();
                case 0x06 -> {
                    return i.k();
                }
                default -> throw new AssertionError("unexpected opcode " + i.code() + " at " + pc);
            }
        }
        throw new AssertionError("the program ran off its end");
    }

    private static int load(int offset, int arch, int nr, long[] args) {
        if (offset == 0) {
            return nr;
        }
        if (offset == 4) {
            return arch;
        }
        long arg = args[(offset - 16) / 8];
        return (offset - 16) % 8 == 0 ? (int) arg : (int) (arg >>> 32);
    }
}
