package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy.Destination;
import dev.airlock.core.RequestApproval;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/** The approval hold on its own, over a real unix socket: who is asked, what they see, and what a refusal or a cut does. */
class ApprovalHoldTest {

    static Interception interception;
    static EgressRules rules;

    @TempDir
    Path tmp;
    SocketPair pair;
    EgressConnection c;
    final List<String> asked = new CopyOnWriteArrayList<>();

    @BeforeAll
    static void create() throws Exception {
        interception = Interception.create("sb-hold", List.of(),
                List.of(new RequestApproval(List.of(Destination.of("gated.example", 443)), Set.of("POST", "DELETE"))), null);
        rules = new EgressRules(EgressProxyTest.loopbackPolicy(List.of(Destination.of("gated.example")), List.of()), Set.of(),
                HostResolver.NONE);
    }

    @AfterAll
    static void close() {
        interception.close();
    }

    @BeforeEach
    void open() throws Exception {
        pair = SocketPair.open(tmp, 1024);
        c = pair.connection(() -> rules, new SandboxBudget());
        c.record.asked(EgressRequest.tunnel(EgressProtocol.HTTP_CONNECT, "gated.example", 443));
    }

    @AfterEach
    void closePair() throws Exception {
        pair.close();
    }

    RequestGate answering(boolean yes) {
        return (sandboxId, method, host, port, target) -> {
            asked.add(sandboxId + " " + method + " " + host + ":" + port + " " + target);
            return yes;
        };
    }

    boolean pass(RequestGate gate, List<String> methods, String path, long length) throws Exception {
        return new ApprovalHold("sb-hold", interception, gate).pass(c, methods, path, length, pair.proxySide.input(), pair.proxySide.output());
    }

    EgressRecord record() {
        return c.record.toRecord("sb-hold", c.cutBy());
    }

    @Test
    void aRequestNoApprovalCoversPassesWithoutAskingAnyone() throws Exception {
        assertThat(pass(answering(false), List.of("GET"), "/", 0)).isTrue();
        assertThat(pass(answering(false), List.of("PUT"), "/", 0)).isTrue();
        assertThat(asked).isEmpty();
        assertThat(record().approval()).isNull();
    }

    @Test
    void aLowerCaseMethodIsHeldLikeItsUpperCase() throws Exception {
        assertThat(pass(answering(false), List.of("post"), "/", 0)).isFalse();
        assertThat(asked).containsExactly("sb-hold post gated.example:443 /");
    }

    @Test
    void anApprovedRequestGoesOnAndTheGateSawTheSandboxMethodHostAndTarget() throws Exception {
        assertThat(pass(answering(true), List.of("POST"), "/v1/charges?x=1", 0)).isTrue();
        assertThat(asked).containsExactly("sb-hold POST gated.example:443 /v1/charges?x=1");
        assertThat(record().approval()).isEqualTo(EgressRecord.APPROVED);
    }

    @Test
    void aMethodOverrideHeaderIsHeldAsTheMethodItNames() throws Exception {
        assertThat(pass(answering(false), List.of("GET", "DELETE"), "/repo", 0)).isFalse();
        assertThat(asked).containsExactly("sb-hold DELETE gated.example:443 /repo");
    }

    @Test
    void aDeniedRequestIsAnswered403AndItsSmallBodyReadSoTheClientSeesTheAnswer() throws Exception {
        pair.send("hello".getBytes(StandardCharsets.ISO_8859_1));
        assertThat(pass(answering(false), List.of("POST"), "/delete-everything", 5)).isFalse();
        assertThat(pair.proxySide.buffered().remaining()).isZero();
        String answer = new String(pair.answerAfterClose(), StandardCharsets.UTF_8);
        assertThat(answer).startsWith("HTTP/1.1 403 ").contains("X-Airlock-Rule: request approval: POST denied")
                .contains("needs a person's approval");
        EgressRecord r = record();
        assertThat(r.allowed()).isFalse();
        assertThat(r.approval()).isEqualTo(EgressRecord.DENIED);
        assertThat(r.rule()).isEqualTo("request approval: POST denied");
    }

    @Test
    void theGateSeesAPrintableBoundedTargetNeverRawBytes() throws Exception {
        pass(answering(false), List.of("POST"), "/a\u001b[2J\r\n" + "x".repeat(2000), 0);
        String target = asked.getFirst().substring(asked.getFirst().indexOf(" /") + 1);
        assertThat(target).hasSize(RequestGate.MAX_TARGET).endsWith("...").doesNotContain("\u001b").doesNotContain("\r");
    }

    @Test
    void aCutWhileWaitingInterruptsTheGateAndALaterYesSendsNothing() throws Exception {
        CountDownLatch waiting = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        RequestGate stubborn = (sandboxId, method, host, port, target) -> {
            waiting.countDown();
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                interrupted.set(true);
            }
            return true;        // says yes anyway, after the cut
        };
        Thread.ofVirtual().start(() -> {
            try {
                waiting.await();
                c.cut("proxy closed");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        long started = System.nanoTime();
        assertThat(pass(stubborn, List.of("POST"), "/", 0)).isFalse();
        assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started)).as("no hang").isLessThan(30);
        assertThat(interrupted).isTrue();
        EgressRecord r = record();
        assertThat(r.approval()).isEqualTo(EgressRecord.DENIED);
        assertThat(r.rule()).isEqualTo("request approval: POST denied (proxy closed)");
    }

    @Test
    void aGateThatFailsRefuses() throws Exception {
        RequestGate broken = (sandboxId, method, host, port, target) -> {
            throw new IllegalStateException("no store");
        };
        assertThat(pass(broken, List.of("POST"), "/", 0)).isFalse();
        assertThat(record().approval()).isEqualTo(EgressRecord.DENIED);
    }

    @Test
    void whileTheGateWaitsOnlyTheApprovalTimeoutApplies() throws Exception {
        EgressProxy.Options tight = new EgressProxy.Options(java.time.Duration.ofSeconds(1), java.time.Duration.ZERO, java.time.Duration.ZERO,
                1024).withApprovalTimeout(java.time.Duration.ofHours(1));
        RequestGate watching = (sandboxId, method, host, port, target) -> {
            long later = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
            return c.overdue(later, tight) == null && c.overdue(later, tight.withApprovalTimeout(java.time.Duration.ZERO)) != null;
        };
        assertThat(pass(watching, List.of("POST"), "/", 0)).isTrue();
        assertThat(c.overdue(System.nanoTime() + TimeUnit.SECONDS.toNanos(1), tight)).isEqualTo("idle timeout");
    }
}
