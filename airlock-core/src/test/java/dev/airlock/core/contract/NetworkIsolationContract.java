package dev.airlock.core.contract;

import dev.airlock.core.ExecResult;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static dev.airlock.core.contract.Hostile.py;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The sandbox's network namespace holds only lo: nothing outside it, the host included, can be
 * reached; names do not resolve; and the seccomp filter refuses every socket family but unix,
 * IPv4 and IPv6.
 */
public abstract class NetworkIsolationContract extends ContractTestBase {

    protected NetworkIsolationContract(DriverContract driver) {
        super(driver);
    }

    @Test
    @Tag("smoke")
    void onlyLoopbackExists() {
        ExecResult r = ok(python("""
                lines = open("/proc/net/dev").read().splitlines()[2:]
                print([l.split(":")[0].strip() for l in lines])
                print(open("/proc/net/route").read().splitlines()[1:])
                routes6 = [l.split() for l in open("/proc/net/ipv6_route").read().splitlines()]
                print(sorted({r[9] for r in routes6}))
                # a default (::/0) route that is not the kernel's unreachable null entry (RTF_REJECT 0x200)
                print([r for r in routes6 if r[1] == "00" and not int(r[8], 16) & 0x200])
                """));
        // No IPv4 route at all; IPv6 only through lo, and no usable default route. The Sentry's stack
        // (gVisor) lists no IPv6 route at all, not even lo's.
        assertThat(r.stdoutText()).isEqualTo(gvisor() ? "['lo']\n[]\n[]\n[]\n" : "['lo']\n[]\n['lo']\n[]\n");
    }

    @ParameterizedTest(name = "TCP {0} port {1}")
    @CsvSource({
            "1.1.1.1, 53", "8.8.8.8, 80", "8.8.8.8, 443", "169.254.169.254, 80", "10.0.0.1, 22", "192.168.1.1, 80",
            "172.17.0.1, 2375", "::ffff:8.8.8.8, 80", "2001:4860:4860::8888, 443", "64:ff9b::808:808, 80"})
    void connectingOutFailsWithNetworkUnreachable(String address, int port) {
        ExecResult r = ok(python(py("""
                import socket
                fam = socket.AF_INET6 if ":" in "%s" else socket.AF_INET
                def connect():
                    s = socket.socket(fam, socket.SOCK_STREAM)
                    s.settimeout(5)
                    s.connect(("%s", %d))
                attempt("connect", connect)
                """.formatted(address, address, port))));
        assertThat(r.stdoutText()).isEqualTo("connect: " + unreachable() + "\n");
    }

    /**
     * The host listens on all of its addresses; the host itself can connect, the sandbox reaches
     * none of them, and its own 127.0.0.1 is not the host's.
     */
    @Test
    void hostAddressesAreUnreachable() throws IOException {
        List<InetAddress> hostAddresses = new ArrayList<>();
        for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                if (!a.isLoopbackAddress() && !a.isLinkLocalAddress()) {
                    hostAddresses.add(a);
                }
            }
        }
        assumeTrue(!hostAddresses.isEmpty(), "the host has no address but loopback");
        try (ServerSocket listener = new ServerSocket()) {
            listener.bind(new InetSocketAddress("::", 0));
            int port = listener.getLocalPort();
            try (Socket control = new Socket()) {
                control.connect(new InetSocketAddress(hostAddresses.getFirst(), port), 2000);
            }
            try (Socket accepted = listener.accept()) {
                assertThat(accepted.isConnected()).as("the host reaches its own listener").isTrue();
            }
            StringBuilder code = new StringBuilder("import socket\n");
            StringBuilder expected = new StringBuilder();
            for (InetAddress a : hostAddresses) {
                String host = a.getHostAddress().replaceAll("%.*", "");
                code.append("""
                        def c(fam=%s, addr=("%s", %d)):
                            s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(5); s.connect(addr)
                        attempt("%s", c)
                        """.formatted(a instanceof Inet6Address ? "socket.AF_INET6" : "socket.AF_INET", host, port, host));
                expected.append(host).append(": ").append(unreachable()).append("\n");
            }
            code.append("""
                    def lo():
                        s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", %d))
                    attempt("127.0.0.1", lo)
                    """.formatted(port));
            expected.append("127.0.0.1: ECONNREFUSED Connection refused\n");
            ExecResult r = ok(python(py(code.toString())));
            assertThat(r.stdoutText()).isEqualTo(expected.toString());
            listener.setSoTimeout(300);
            assertThatThrownBy(listener::accept).as("nothing from the sandbox arrived").isInstanceOf(SocketTimeoutException.class);
        }
    }

    @Test
    void namesDoNotResolve() {
        ExecResult r = ok(python("""
                import socket
                for name in ["example.com", "google.com", "metadata.google.internal"]:
                    try:
                        print(name, socket.getaddrinfo(name, 80))
                    except socket.gaierror as e:
                        print(name, e.errno, e.strerror)
                print(repr(open("/etc/resolv.conf").read()))
                print(socket.getaddrinfo("localhost", 80, socket.AF_INET, socket.SOCK_STREAM)[0][4])
                """));
        assertThat(r.stdoutText()).isEqualTo("""
                example.com -2 Name or service not known
                google.com -2 Name or service not known
                metadata.google.internal -2 Name or service not known
                ''
                ('127.0.0.1', 80)
                """);
    }

    @Test
    void udpToTheOutsideFailsWithNetworkUnreachable() {
        ExecResult r = ok(python(py("""
                import socket
                u4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                attempt("udp 8.8.8.8:53", lambda: u4.sendto(b"x", ("8.8.8.8", 53)))
                attempt("udp broadcast", lambda: (u4.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1), u4.sendto(b"x", ("255.255.255.255", 67))))
                u6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
                attempt("udp6 2001:4860:4860::8888", lambda: u6.sendto(b"x", ("2001:4860:4860::8888", 53)))
                attempt("udp6 ::ffff:8.8.8.8", lambda: u6.sendto(b"x", ("::ffff:8.8.8.8", 53)))
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                udp 8.8.8.8:53: %s
                udp broadcast: ENETUNREACH Network is unreachable
                udp6 2001:4860:4860::8888: %s
                udp6 ::ffff:8.8.8.8: %s
                """.formatted(unreachable(), unreachable(), unreachable()));
    }

    /**
     * How sending to an address off the sandbox fails. The host's kernel has no route at all:
     * ENETUNREACH. gVisor's Sentry has its loopback device and nothing else, and answers that no
     * route leads to the host: EHOSTUNREACH. Either way nothing leaves.
     */
    private String unreachable() {
        return gvisor() ? "EHOSTUNREACH No route to host" : "ENETUNREACH Network is unreachable";
    }

    /**
     * Raw IP needs CAP_NET_RAW, which the sandbox lacks; ping sockets are outside ping_group_range.
     * gVisor's Sentry allows ping sockets (it has no ping_group_range): they reach only its own
     * loopback, the one device its stack has (see {@link #onlyLoopbackExists}).
     */
    @Test
    void rawAndIcmpSocketsAreRefused() {
        ExecResult r = ok(python(py("""
                import socket
                attempt("raw icmp", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
                attempt("raw tcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP))
                attempt("raw ip", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW))
                attempt("raw icmpv6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))
                attempt("ping", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))
                """)));
        assertThat(r.stdoutText()).isEqualTo("""
                raw icmp: EPERM Operation not permitted
                raw tcp: EPERM Operation not permitted
                raw ip: EPERM Operation not permitted
                raw icmpv6: EPERM Operation not permitted
                %s
                """.formatted(gvisor() ? "ping: ok" : "ping: EACCES Permission denied"));
        if (gvisor()) {
            ExecResult ping = ok(python(py("""
                    import socket
                    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
                    attempt("echo request to 8.8.8.8", lambda: s.sendto(b"\\x08\\0\\0\\0\\0\\0\\0\\0", ("8.8.8.8", 0)))
                    """)));
            assertThat(ping.stdoutText()).as("the ping socket reaches nothing off the sandbox")
                    .isEqualTo("echo request to 8.8.8.8: " + unreachable() + "\n");
        }
    }

    /**
     * Every family but AF_UNIX, AF_INET and AF_INET6 is refused by the seccomp filter: netlink
     * (routes, firewall), packet (sniffing), vsock (the hypervisor's services, which are not
     * network-namespaced), AF_ALG (kernel crypto) and the rarely used protocol families that carry
     * most socket CVEs.
     */
    @ParameterizedTest(name = "{0} ({1})")
    @CsvSource({
            "AF_PACKET, 17, 3", "AF_PACKET, 17, 2", "AF_NETLINK, 16, 3", "AF_NETLINK, 16, 2", "AF_VSOCK, 40, 1",
            "AF_VSOCK, 40, 2", "AF_ALG, 38, 5", "AF_KEY, 15, 3", "AF_XDP, 44, 3", "AF_BLUETOOTH, 31, 3", "AF_CAN, 29, 3",
            "AF_TIPC, 30, 5", "AF_RDS, 21, 5", "AF_SMC, 43, 1", "AF_QIPCRTR, 42, 2", "AF_PPPOX, 24, 1", "AF_X25, 9, 5",
            "AF_AX25, 3, 5", "AF_APPLETALK, 5, 2", "AF_NFC, 39, 5", "AF_LLC, 26, 2", "AF_ATMPVC, 8, 2", "AF_IEEE802154, 36, 2",
            "AF_MCTP, 45, 2", "AF_KCM, 41, 2", "AF_RXRPC, 33, 2", "AF_CAIF, 37, 1"})
    void deniedSocketFamilyIsRefusedWithEperm(String name, int family, int type) {
        ExecResult r = ok(python(py("""
                import socket
                attempt("socket", lambda: socket.socket(%d, %d, 0))
                print(sc(41, %d, %d, 0))
                """.formatted(family, type, family, type))));
        assertThat(r.stdoutText()).isEqualTo("socket: EPERM Operation not permitted\nresult=-1 errno=1\n");
    }

    /**
     * socketpair() is not filtered by family: it must yield a usable pair for no family but
     * AF_UNIX, or the family filter of socket() could be sidestepped.
     */
    @Test
    void socketpairYieldsNoSocketOfAnyOtherFamily() {
        ExecResult r = ok(python("""
                import ctypes, os
                libc = ctypes.CDLL(None, use_errno=True)
                fds = (ctypes.c_int * 2)()
                made = []
                for fam in range(0, 64):
                    for typ in (1, 2, 3, 5):
                        if libc.socketpair(fam, typ, 0, fds) == 0:
                            made.append((fam, typ))
                            os.close(fds[0]); os.close(fds[1])
                print(made)
                """));
        assertThat(r.stdoutText()).isEqualTo("[(1, 1), (1, 2), (1, 3), (1, 5)]\n");
    }

    /**
     * The host's abstract unix sockets (which are bound to the network namespace, not the file
     * system) are out of reach: a host process listens on one, the sandbox cannot connect.
     */
    @Test
    void hostAbstractUnixSocketIsUnreachable() throws Exception {
        String name = Hostile.token("abstract");
        Path ready = Files.createTempFile("airlock-abstract", ".ready");
        Files.delete(ready);
        Path output = Files.createTempFile("airlock-abstract", ".out");
        Process host = new ProcessBuilder("/usr/bin/python3", "-c", """
                import socket, sys, time
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.bind("\\0" + sys.argv[1])
                s.listen(8)
                open(sys.argv[2], "w").close()
                s.settimeout(20)
                try:
                    c, _ = s.accept()
                    print("ACCEPTED", flush=True)
                except socket.timeout:
                    pass
                """, name, ready.toString()).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        try {
            assertThat(Hostile.eventually(10_000, () -> Files.exists(ready))).as("host listener ready").isTrue();
            assertThat(Files.readString(Path.of("/proc/net/unix"))).as("host lists it").contains("@" + name);
            ExecResult r = ok(python(py("""
                    import socket
                    def connect():
                        socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).connect("\\0%s")
                    attempt("connect", connect)
                    print("listed", "@%s" in open("/proc/net/unix").read())
                    """.formatted(name, name))));
            assertThat(r.stdoutText()).isEqualTo("connect: ECONNREFUSED Connection refused\nlisted False\n");
        } finally {
            host.destroy();
            host.waitFor(10, TimeUnit.SECONDS);
            Files.deleteIfExists(ready);
        }
        try {
            assertThat(Files.readString(output)).as("the host listener accepted nothing").doesNotContain("ACCEPTED");
        } finally {
            Files.delete(output);
        }
    }
}
