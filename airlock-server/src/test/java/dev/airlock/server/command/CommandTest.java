package dev.airlock.server.command;

import dev.airlock.core.AirlockException;
import dev.airlock.core.Language;
import dev.airlock.core.NetworkPolicy;
import dev.airlock.server.policy.Operation;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The closed set of commands: each names the operation a policy must grant, and which granted
 * operation covers which command is one small table (its own operation; the one-shot run's own
 * steps; a stat by either files permission; a describe by any).
 */
class CommandTest {

    private static final String S = "al-test-0123456789abcdef";

    /** One of every kind of command; {@link #everyKindHasASample} keeps it complete. */
    private static final List<Command<?>> SAMPLES = List.of(
            new Command.Create(null, null, null, null, null, null, null, null, null),
            new Command.ListSandboxes(null),
            new Command.Describe(S),
            new Command.Egress(S),
            new Command.ExtendTtl(S, Duration.ofMinutes(1)),
            new Command.Pause(S),
            new Command.Resume(S),
            new Command.TakeSnapshot(S, null),
            new Command.ListSnapshots(),
            new Command.DescribeSnapshot("snap-0123456789abcdef"),
            new Command.DeleteSnapshot("snap-0123456789abcdef"),
            new Command.ReadSnapshotArchive("snap-0123456789abcdef", null),
            new Command.Fork(new Command.Create(null, null, null, null, null, null, null, null, null).from("snap-0123456789abcdef"), 2),
            new Command.UpdateNetwork(S, NetworkPolicy.NONE),
            new Command.Destroy(S),
            new Command.Exec(S, new ExecSource.Command(List.of("true")), null, null),
            new Command.StartProcess(S, new ExecSource.Command(List.of("sleep", "1")), null),
            new Command.Signal(S, "p1", 15),
            new Command.Input(S, "p1", new byte[] {1}, true, null),
            new Command.ProcessOutput(S, "p1"),
            new Command.Attach(S, "p1"),
            new Command.OpenPort(S, 8000),
            new Command.Run(Language.PYTHON, "print(1)", null, null, null, null, null),
            new Command.WriteFile(S, "a.txt", null),
            new Command.ReadFile(S, "a.txt", null),
            new Command.Stat(S, "a.txt"),
            new Command.ListFiles(S, "."),
            new Command.Mkdir(S, "d", true),
            new Command.Remove(S, "d", true),
            new Command.Rename(S, "a.txt", "b.txt"),
            new Command.ListOutputs(),
            new Command.DescribeOutputs(S),
            new Command.ReadOutput(S, "out.txt", null),
            new Command.DeleteOutputs(S),
            new Command.ListApprovals(),
            new Command.DescribeApproval("ap-0123456789abcdef"),
            new Command.Decide("ap-0123456789abcdef", true, "rest:operator", null),
            new Command.Metrics(),
            new Command.MetricsHistory(),
            new Command.ListNodes(),
            new Command.DrainNode("node-1", true),
            new Command.ReadAudit(null, null, null, null, null, 10, null, null),
            new Command.VerifyAudit(),
            new Command.ListImages(),
            new Command.CreateContext(S, null),
            new Command.ListContexts(S),
            new Command.RestartContext(S, "ctx-1"),
            new Command.DeleteContext(S, "ctx-1"),
            new Command.RunCell(S, "ctx-1", "x + 1", null, null));

    /** What the one-shot run does on its own sandbox. */
    private static final Set<Class<?>> RUN_STEPS = Set.of(Command.Create.class, Command.Mkdir.class, Command.WriteFile.class,
            Command.ReadFile.class, Command.Stat.class, Command.ListFiles.class, Command.Exec.class, Command.Destroy.class);

    @Test
    void everyKindHasASample() {
        Set<Class<?>> permitted = Set.of(Command.class.getPermittedSubclasses());
        assertThat(SAMPLES.stream().map(Object::getClass).collect(Collectors.toSet())).isEqualTo(permitted);
        assertThat(SAMPLES).hasSize(permitted.size());
    }

    @Test
    void everyKindNamesAnOperation() {
        for (Command<?> c : SAMPLES) {
            assertThat(c.operation()).as(c.getClass().getSimpleName()).isNotNull();
        }
        // and every operation is some command's, so none is granted for nothing; sandbox.any is no command's:
        // it widens whose sandboxes some commands reach (theOperatorsReachIsListingLookingExtendingAndDestroying)
        assertThat(SAMPLES.stream().map(Command::operation).collect(Collectors.toSet()))
                .containsExactlyInAnyOrderElementsOf(Operation.all());
    }

    @Test
    void theOperatorsReachIsListingLookingExtendingAndDestroying() {
        Set<Class<?>> reach = SAMPLES.stream().filter(Command::reachesAnyOwner).map(Object::getClass).collect(Collectors.toSet());
        assertThat(reach).isEqualTo(Set.of(Command.ListSandboxes.class, Command.Describe.class, Command.Egress.class,
                Command.ListContexts.class, Command.ListFiles.class, Command.Stat.class, Command.ExtendTtl.class, Command.Destroy.class));
        // nothing that runs code in another's sandbox, changes it, or reads what its programs hold or wrote
        assertThat(SAMPLES).filteredOn(c -> c.operation() == Operation.EXEC || c.operation() == Operation.FILES_WRITE
                        || c.operation() == Operation.NETWORK_UPDATE || c.operation() == Operation.SANDBOX_SNAPSHOT)
                .noneMatch(Command::reachesAnyOwner);
        assertThat(new Command.ReadFile(S, "a.txt", null).reachesAnyOwner()).isFalse();
        assertThat(new Command.ProcessOutput(S, "p1").reachesAnyOwner()).isFalse();
    }

    @Test
    void starGrantsEveryOperationButTheOperatorsReach() {
        assertThat(Operation.all()).doesNotContain(Operation.SANDBOX_ANY).hasSize(Operation.values().length - 1);
        assertThat(Operation.parse("sandbox.any")).isEqualTo(Operation.SANDBOX_ANY);
    }

    @Test
    void aCommandIsCoveredByItsOwnOperation() {
        for (Command<?> c : SAMPLES) {
            assertThat(c.coveredBy(c.operation())).as(c.getClass().getSimpleName()).isTrue();
        }
    }

    @Test
    void theOneShotRunCoversExactlyItsOwnSteps() {
        Set<Class<?>> coveredByRun = SAMPLES.stream().filter(c -> c.operation() != Operation.RUN && c.coveredBy(Operation.RUN))
                .map(Object::getClass).collect(Collectors.toSet());
        // its steps, and describe, which any operation covers
        Set<Class<?>> expected = new HashSet<>(RUN_STEPS);
        expected.add(Command.Describe.class);
        assertThat(coveredByRun).isEqualTo(expected);
        // the steps' own operations do not cover the run
        Command<?> run = SAMPLES.stream().filter(c -> c instanceof Command.Run).findFirst().orElseThrow();
        assertThat(Arrays.stream(Operation.values()).filter(run::coveredBy)).containsExactly(Operation.RUN);
    }

    @Test
    void aStatIsCoveredByEitherFilesPermission() {
        Command.Stat stat = new Command.Stat(S, "a.txt");
        assertThat(Arrays.stream(Operation.values()).filter(stat::coveredBy))
                .containsExactlyInAnyOrder(Operation.FILES_READ, Operation.FILES_WRITE, Operation.RUN);
    }

    @Test
    void aDescribeIsCoveredByAnyOperation() {
        Command.Describe describe = new Command.Describe(S);
        assertThat(Arrays.stream(Operation.values()).filter(describe::coveredBy)).containsExactlyInAnyOrder(Operation.values());
    }

    @Test
    void nothingElseCrossesOperations() {
        for (Command<?> c : SAMPLES) {
            for (Operation granted : Operation.values()) {
                boolean expected = granted == c.operation()
                        || (granted == Operation.RUN && RUN_STEPS.contains(c.getClass()))
                        || (c instanceof Command.Stat && granted == Operation.FILES_WRITE)
                        || (c instanceof Command.ListContexts && granted == Operation.EXEC)
                        || c instanceof Command.Describe;
                assertThat(c.coveredBy(granted)).as("%s covered by %s", c.getClass().getSimpleName(), granted.id()).isEqualTo(expected);
            }
        }
    }

    @Test
    void execCoversListingContexts() {
        assertThat(new Command.ListContexts(S).coveredBy(Operation.EXEC)).isTrue();
        assertThat(new Command.ListContexts(S).coveredBy(Operation.FILES_READ)).isFalse();
    }

    // --- create's labels ---

    private static Command.Create withLabels(Map<String, String> labels) {
        return new Command.Create(null, null, null, null, null, labels, null, null, null);
    }

    private static Map<String, String> labels(int n) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < n; i++) {
            m.put("k" + i, "v");
        }
        return m;
    }

    @Test
    void aCreateTakesUpToSixtyFourLabels() {
        assertThat(Command.Create.MAX_LABELS).isEqualTo(64);
        assertThatCode(() -> withLabels(labels(64))).doesNotThrowAnyException();
        assertThatThrownBy(() -> withLabels(labels(65))).isInstanceOf(AirlockException.class)
                .satisfies(e -> assertThat(((AirlockException) e).kind()).isEqualTo(AirlockException.Kind.INVALID_ARGUMENT))
                .hasMessageContaining("at most 64 labels, not 65");
    }

    @Test
    void aLabelKeyMustBeNonBlankWithoutAnEqualsSign() {
        for (String key : List.of("a=b", "=", "", " ", "\t")) {
            assertThatThrownBy(() -> withLabels(Map.of(key, "v"))).as("key '%s'", key).isInstanceOf(AirlockException.class)
                    .satisfies(e -> assertThat(((AirlockException) e).kind()).isEqualTo(AirlockException.Kind.INVALID_ARGUMENT))
                    .hasMessageContaining("must be non-blank and contain no '='");
        }
        assertThatCode(() -> withLabels(Map.of("team", "a=b", "x.y/z", ""))).as("values may hold anything").doesNotThrowAnyException();
    }

    @Test
    void aCreateWithoutLabelsHasNone() {
        assertThat(withLabels(null).labels()).isEmpty();
    }
}
