package dev.airlock.egress;

import dev.airlock.core.NetworkPolicy;
import dev.airlock.core.NetworkPolicy.Destination;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Admission on its own: the rules on the name as spelled, then the byte and connection budgets. */
class AdmissionTest {

    final SandboxBudget budget = new SandboxBudget();

    static EgressRules rules(NetworkPolicy policy) {
        return new EgressRules(policy, Set.of(), HostResolver.NONE);
    }

    static NetworkPolicy allowTestExample() {
        return EgressProxyTest.loopbackPolicy(List.of(Destination.of("test.example", 443)), List.of());
    }

    EgressRefusal refusal(Admission admission, EgressRequest asked) {
        try {
            admission.admit(asked);
        } catch (EgressRefusal r) {
            return r;
        }
        throw new AssertionError("admitted: " + asked);
    }

    @Test
    void anAllowedNameIsAdmittedToTheAddressTheRulesChoseAndHoldsASlot() throws Exception {
        EgressRules rules = rules(allowTestExample());
        Admission admission = new Admission(() -> rules, budget);
        Admission.Admitted admitted = admission.admit(EgressRequest.tunnel(EgressProtocol.HTTP_CONNECT, "TEST.example", 443));
        assertThat(admitted.address()).isEqualTo(InetAddress.getByName("127.0.0.1"));
        assertThat(admitted.admittedBy()).isSameAs(rules);
        assertThat(admitted.rule()).contains("test.example");
        assertThat(budget.slotsTaken()).isEqualTo(1);
        admission.release();
        assertThat(budget.slotsTaken()).isZero();
    }

    @Test
    void aDeniedNameOrPortIsRefusedWith403AndTakesNoSlot() {
        Admission admission = new Admission(() -> rules(allowTestExample()), budget);
        for (EgressRequest asked : List.of(EgressRequest.tunnel(EgressProtocol.SOCKS5, "other.example", 443),
                EgressRequest.tunnel(EgressProtocol.SOCKS5, "test.example", 22),
                EgressRequest.tunnel(EgressProtocol.SOCKS5, "169.254.169.254", 443),
                EgressRequest.tunnel(EgressProtocol.SOCKS5, "test.example\r\nX-Injected: 1", 443),
                EgressRequest.tunnel(EgressProtocol.SOCKS5, "", 443))) {
            EgressRefusal r = refusal(admission, asked);
            assertThat(r.httpStatus).as(asked.requestedHost()).isEqualTo(403);
            assertThat(r.socksReply).isEqualTo(Socks5Handshake.NOT_ALLOWED);
            assertThat(r.rule).isNotBlank();
            assertThat(r.address).isNull();
        }
        assertThat(budget.slotsTaken()).isZero();
    }

    @Test
    void theConnectionBudgetRefusesTheOneTooManyWith429UntilASlotIsFree() throws Exception {
        Admission admission = new Admission(() -> rules(allowTestExample().withLimits(2, 1 << 20)), budget);
        EgressRequest asked = EgressRequest.tunnel(EgressProtocol.HTTP_CONNECT, "test.example", 443);
        admission.admit(asked);
        admission.admit(asked);
        EgressRefusal r = refusal(admission, asked);
        assertThat(r.httpStatus).isEqualTo(429);
        assertThat(r.rule).isEqualTo("limit connections");
        assertThat(r.getMessage()).contains("2 connections");
        assertThat(r.address).isEqualTo(InetAddress.getByName("127.0.0.1"));
        assertThat(budget.slotsTaken()).isEqualTo(2);
        admission.release();
        admission.admit(asked);
    }

    @Test
    void aSpentByteBudgetRefusesEvenAnAllowedNameAndTakesNoSlot() {
        NetworkPolicy policy = allowTestExample().withLimits(8, 100);
        Admission admission = new Admission(() -> rules(policy), budget);
        assertThat(budget.spend(100, policy)).isTrue();
        EgressRefusal r = refusal(admission, EgressRequest.tunnel(EgressProtocol.HTTP_CONNECT, "test.example", 443));
        assertThat(r.rule).isEqualTo("limit bytes");
        assertThat(r.httpStatus).isEqualTo(403);
        assertThat(budget.slotsTaken()).isZero();
    }

    @Test
    void theNewestRulesDecide() throws Exception {
        EgressRules[] current = {rules(allowTestExample())};
        Admission admission = new Admission(() -> current[0], budget);
        EgressRequest asked = EgressRequest.tunnel(EgressProtocol.HTTP_CONNECT, "test.example", 443);
        admission.admit(asked);
        current[0] = rules(EgressProxyTest.loopbackPolicy(List.of(Destination.of("other.example", 443)), List.of()));
        assertThat(refusal(admission, asked).httpStatus).isEqualTo(403);
    }
}
