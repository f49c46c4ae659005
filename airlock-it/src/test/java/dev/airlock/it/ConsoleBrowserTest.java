package dev.airlock.it;

import dev.airlock.server.audit.AuditRecord;
import dev.airlock.server.policy.Policy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.openqa.selenium.By;
import org.openqa.selenium.Cookie;
import org.openqa.selenium.Keys;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.Select;
import org.openqa.selenium.support.ui.WebDriverWait;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The web console in a real browser: Debian's headless chromium, driven through chromedriver by
 * Selenium, against a real server with real sandboxes. Each test signs in with a client token and
 * uses the console as a person would; what the console may show and do is the policy's, so the
 * tests also check what it must not (another client's sandbox, a cross-site request, a cookie
 * after sign-out). Each test saves a screenshot under {@code target/console-screenshots/}; no
 * browser process may outlive its test.
 */
class ConsoleBrowserTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String OPERATOR = "alk_console-operator-token-0123456789abcdef0";
    private static final String AGENT = "alk_console-agent-token-0123456789abcdef012345";
    private static final Path SCREENSHOTS = Path.of("target", "console-screenshots");
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static LiveServer live;
    private final HttpClient http = HttpClient.newHttpClient();
    private static ChromeDriverService service;
    private static ChromeDriver driver;
    private static Path profile;
    /** The browser's first window, where every test starts. */
    private static String console;
    private String testName;

    @BeforeAll
    static void start() throws IOException {
        live = LiveServer.withPolicy("""
                approvals: {timeoutSeconds: 60}
                profiles:
                  default: {}
                  gated: {approvals: [create]}
                  net:
                    network:
                      allow: [{host: test.example}]
                  web: {ports: [8000]}
                  strong: {isolation: gvisor}
                clients:
                  local: {tokenFile: token, profiles: [default, gated, net, web, strong], allow: ["*"]}
                  operator:
                    tokenSha256: %s
                    profiles: [default]
                    allow: [approvals, audit, sandbox.read, sandbox.destroy, sandbox.extend, files.read, sandbox.any]
                  agent: {tokenSha256: %s, profiles: [default], allow: [sandbox.create, sandbox.read, sandbox.destroy, exec]}
                """.formatted(HexFormat.of().formatHex(Policy.sha256(OPERATOR)), HexFormat.of().formatHex(Policy.sha256(AGENT))),
                c -> c.withPoolSize(0));
        startBrowser();
    }

    @AfterAll
    static void stop() throws IOException {
        try {
            stopBrowser();
        } finally {
            if (live != null) {
                live.close();
            }
        }
        assertThat(browserProcesses()).as("chromium or chromedriver processes left by this class").isEmpty();
    }

    /** One browser for the class: starting Chromium for each test took a few seconds each. */
    private static void startBrowser() throws IOException {
        profile = Files.createTempDirectory("airlock-chromium-");
        ChromeOptions options = new ChromeOptions();
        options.setBinary("/usr/bin/chromium");
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1280,800", "--user-data-dir=" + profile);
        service = new ChromeDriverService.Builder().usingDriverExecutable(new File("/usr/bin/chromedriver")).usingAnyFreePort().build();
        driver = new ChromeDriver(service, options);
        console = driver.getWindowHandle();
    }

    /**
     * Each test starts from a browser as new: one window of the usual size, on a blank page, with no
     * cookie, no stored data or cache of any site, and the system's colour scheme.
     */
    @BeforeEach
    void freshBrowser(TestInfo info) {
        testName = info.getTestMethod().orElseThrow().getName();
        for (String handle : driver.getWindowHandles()) {
            if (!handle.equals(console)) {
                driver.switchTo().window(handle).close();
            }
        }
        driver.switchTo().window(console);
        driver.get("about:blank");
        driver.manage().window().setSize(new org.openqa.selenium.Dimension(1280, 800));
        driver.executeCdpCommand("Emulation.setEmulatedMedia", java.util.Map.of("features", List.of()));
        driver.executeCdpCommand("Network.clearBrowserCookies", java.util.Map.of());
        driver.executeCdpCommand("Network.clearBrowserCache", java.util.Map.of());
        driver.executeCdpCommand("Storage.clearDataForOrigin", java.util.Map.of("origin", live.uri().getScheme() + "://" + live.uri().getAuthority(),
                "storageTypes", "all"));
    }

    @AfterEach
    void screenshotOfTheEnd() throws IOException {
        Files.createDirectories(SCREENSHOTS);
        Files.write(SCREENSHOTS.resolve(testName + ".png"), driver.getScreenshotAs(OutputType.BYTES));
    }

    private static void stopBrowser() throws IOException {
        try {
            if (driver != null) {
                driver.quit();
            }
        } finally {
            if (service != null) {
                service.stop();
            }
            if (profile != null) {
                await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(browserProcesses()).as("browser processes after quit").isEmpty());
                LiveServer.deleteTree(profile);
            }
        }
    }

    /** Saves what the browser shows now as {@code <name>.png} (besides the one each test ends with). */
    private void screenshot(String name) throws IOException {
        Files.createDirectories(SCREENSHOTS);
        Files.write(SCREENSHOTS.resolve(name + ".png"), driver.getScreenshotAs(OutputType.BYTES));
    }

    /** This JVM's descendant processes that are chromium or chromedriver. */
    private static List<String> browserProcesses() {
        return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .map(p -> p.pid() + " " + p.info().command().orElse("?"))
                .filter(s -> s.contains("chrom"))
                .toList();
    }

    // --- helpers ---

    private WebDriverWait waiting() {
        // a page re-renders its tables as data comes: an element read while it is replaced is read again
        return (WebDriverWait) new WebDriverWait(driver, WAIT).ignoring(StaleElementReferenceException.class);
    }

    private void signIn(String token) {
        driver.get(live.uri() + "/");
        WebElement field = waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("token")));
        field.sendKeys(token);
        driver.findElement(By.cssSelector("#signin-form button[type=submit]")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("whoami"), "signed in as"));
    }

    private void open(String hash) {
        driver.get(live.uri() + "/#" + hash);
        waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("page")));
    }

    private String cookie() {
        Cookie c = driver.manage().getCookieNamed("airlock_session");
        assertThat(c).as("the session cookie").isNotNull();
        assertThat(c.isHttpOnly()).isTrue();
        assertThat(c.getSameSite()).isEqualTo("Strict");
        return c.getValue();
    }

    private HttpResponse<String> withCookie(String method, String path, String body, String cookie, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(live.uri() + path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                .header("Cookie", "airlock_session=" + cookie);
        if (headers.length > 0) {
            b.headers(headers);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    }

    private String csrf(String cookie) throws Exception {
        HttpResponse<String> r = withCookie("GET", "/console/session", null, cookie);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body()).path("csrf").asString();
    }

    private String createAsLocal(String label) {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"labels\": {\"console\": \"" + label + "\"}}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body()).path("id").asString();
    }

    private static CompletableFuture<HttpResponse<String>> gatedCreate() {
        return CompletableFuture.supplyAsync(() -> live.raw("POST", "/v1/sandboxes", "{\"profile\": \"gated\"}"));
    }

    /**
     * Destroys sandbox {@code id} from its row of the Sandboxes page as a person does: Destroy, then
     * the armed "Really destroy?" (a first click alone destroys nothing); waits until the row is gone.
     */
    private void destroyFrom(String id) {
        String row = "#sandbox-rows tr[data-id='" + id + "']";
        waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector(row + " button.destroy"))).click();
        waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector(row + " button.destroy.armed"))).click();
        waiting().until(ExpectedConditions.invisibilityOfElementLocated(By.cssSelector(row)));
    }

    /** The ids of the local client's sandboxes now. */
    private static java.util.Set<String> sandboxIds() {
        java.util.Set<String> ids = new java.util.HashSet<>();
        JSON.readTree(live.raw("GET", "/v1/sandboxes", null).body()).path("sandboxes").forEach(x -> ids.add(x.path("id").asString()));
        return ids;
    }

    /** The id of the sandbox whose page is shown, from the address. */
    private String sandboxShown() {
        String url = driver.getCurrentUrl();
        return java.net.URLDecoder.decode(url.substring(url.indexOf("#sandbox/") + "#sandbox/".length()), StandardCharsets.UTF_8);
    }

    /** Runs {@code code} with the sandbox page's Run form, as typed. */
    private void run(String code) {
        WebElement field = waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("run-code")));
        field.clear();
        field.sendKeys(code);
        waiting().until(ExpectedConditions.elementToBeClickable(By.id("run"))).click();
    }

    private WebElement pendingRow() {
        return waiting().until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector("#approval-rows tr[data-id]")));
    }

    // --- tests ---

    /**
     * A page served from another port of the same host is another origin, but the browser sends it
     * the console's SameSite cookie all the same (same site). Such a page, opened by a signed-in
     * person, tries what an attacker's would (issue 29): sign the browser into the attacker's
     * client (a no-cors POST of the attacker's token to the sign-in: login CSRF), and drive the
     * person's terminal (a WebSocket to the attach endpoint of their shell, typing a command). Both
     * are refused: the browser stays signed in as the person, the socket never opens, the shell
     * never runs the line.
     */
    @Test
    void aPageOfAnotherLoopbackPortCanNeitherSignTheBrowserInNorDriveItsTerminal() throws Exception {
        signIn(live.token());
        String sandbox = createAsLocal("victim");
        HttpResponse<String> shell = live.raw("POST", "/v1/sandboxes/" + sandbox + "/exec",
                "{\"command\": [\"sh\"], \"background\": true, \"tty\": true}");
        assertThat(shell.statusCode()).as(shell.body()).isEqualTo(202);
        String pid = JSON.readTree(shell.body()).path("id").asString();
        String server = live.uri().toString();
        String ws = server.replaceFirst("^http", "ws");
        String page = """
                <html><body><pre id="log"></pre><script>
                const log = m => { document.getElementById('log').textContent += m + '\\n'; };
                fetch('%s/console/session', { method: 'POST', mode: 'no-cors', credentials: 'include',
                    headers: { 'Content-Type': 'text/plain' }, body: JSON.stringify({ token: '%s' }) })
                  .then(() => log('sign-in sent'), e => log('sign-in failed'));
                const socket = new WebSocket('%s/v1/sandboxes/%s/processes/%s/attach');
                socket.onopen = () => { log('socket open'); socket.send('touch /tmp/hijacked\\n'); };
                socket.onmessage = () => log('socket data');
                socket.onclose = () => log('socket closed');
                </script></body></html>
                """.formatted(server, AGENT, ws, sandbox, pid);
        com.sun.net.httpserver.HttpServer attacker = com.sun.net.httpserver.HttpServer.create(
                new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 0);
        attacker.createContext("/", exchange -> {
            byte[] body = page.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/html; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        attacker.start();
        String log;
        String attackerOrigin = "http://" + live.uri().getHost() + ":" + attacker.getAddress().getPort();
        try {
            driver.get(attackerOrigin + "/");
            waiting().until(d -> {
                String text = d.findElement(By.id("log")).getText();
                return text.contains("socket closed") && text.contains("sign-in ");
            });
            log = driver.findElement(By.id("log")).getText();
        } finally {
            attacker.stop(0);
        }
        assertThat(log).as("what the attacker's page saw").doesNotContain("socket open").doesNotContain("socket data");
        // the refused attach is on the audit log as the signed-in client's, by the origin rule; refusals of one client and
        // rule are folded per minute (docs/audit.md), so when another test's came first this one is counted in that record
        assertThat(live.audit(null, AuditRecord.AUTHORIZATION)).anySatisfy(r -> {
            JsonNode d = JSON.readTree(r.detail());
            assertThat(r.actor()).isEqualTo("local@console");
            assertThat(d.path("decision").asString()).isEqualTo("deny");
            assertThat(d.path("control").asString()).isEqualTo("cross-site");
            assertThat(d.path("rule").asString()).isEqualTo("origin");
            assertThat(d.path("origin").asString()).as("the refused page's origin").isNotEmpty();
        });

        driver.get(server + "/");
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("whoami"), "signed in as local"));
        HttpResponse<String> look = live.raw("POST", "/v1/sandboxes/" + sandbox + "/exec",
                "{\"command\": [\"sh\", \"-c\", \"test -e /tmp/hijacked && echo typed || echo untouched\"]}");
        assertThat(JSON.readTree(look.body()).path("stdout").asString()).as(look.body()).isEqualTo("untouched\n");
    }

    @Test
    void aSandboxCreatedOverRestAppearsAndIsDestroyedFromTheConsole() throws IOException {
        signIn(live.token());
        open("sandboxes");
        String id = createAsLocal("appears");
        By row = By.cssSelector("#sandbox-rows tr[data-id='" + id + "']");
        WebElement shown = waiting().until(ExpectedConditions.visibilityOfElementLocated(row));
        assertThat(shown.getText()).contains("running", "local", "default", "console=appears");
        screenshot("sandboxes");
        // the detail page: processes and files
        shown.findElement(By.linkText(id)).click();
        waiting().until(ExpectedConditions.presenceOfElementLocated(By.id("file-rows")));
        assertThat(driver.findElement(By.cssSelector("#page h1")).getText()).contains(id);
        open("sandboxes");
        destroyFrom(id);
        assertThat(live.raw("GET", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(404);
    }

    /**
     * Issue 31: a sandbox's page polled it, its processes and its egress every second, three requests;
     * that was about 80% of the audit log. It asks for all three in one request
     * ({@code ?include=processes,egress}), and the reads of the page's refresh are folded per client and sandbox in
     * windows of an hour: once the page is drawn, polling adds at most the first refresh read in
     * full (a request and its decision), and the count, written when the window closes, accounts
     * for every poll; the page's own first reads and a change made from it are recorded one by one.
     */
    @Test
    void theConsolesPollingIsFoldedOnTheAuditLog() throws Exception {
        String id = createAsLocal("polled");
        try {
            JsonNode watched = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id + "?include=processes,egress", null).body());
            assertThat(watched.path("id").asString()).isEqualTo(id);
            assertThat(watched.path("processes").isArray()).as(watched.toString()).isTrue();
            assertThat(watched.path("egress").isArray()).as(watched.toString()).isTrue();
            HttpResponse<String> bogus = live.raw("GET", "/v1/sandboxes/" + id + "?include=files", null);
            assertThat(bogus.statusCode()).isEqualTo(400);
            assertThat(bogus.body()).contains("query 'include' takes processes and egress");
            signIn(live.token());
            assertThat(live.server.audit().closeWindowsAndPrune(10_000)).isTrue();
            int opened = live.audit(id, null).size();
            open("sandbox/" + id);
            waiting().until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#file-rows tr")));
            // counts the page's own requests from here on, and waits for 20 of them: the page polling on its own
            driver.executeScript("window.polls = 0; const f = window.fetch; window.fetch = (...a) => { window.polls++; return f(...a); };");
            int before = live.audit(id, null).size();
            assertThat(before - opened).as("the page's first reads (the sandbox with its processes and egress, its files), each in full")
                    .isGreaterThanOrEqualTo(2 * 2);
            await().atMost(WAIT).until(() -> ((Number) driver.executeScript("return window.polls;")).longValue() >= 20);
            List<AuditRecord> all = live.audit(id, null);
            List<AuditRecord> during = all.subList(before, all.size());
            assertThat(during).as("records of a sandbox's page polling for seconds").hasSizeLessThanOrEqualTo(2);

            driver.findElement(By.id("extend")).click(); // a change: in full, each time
            await().atMost(WAIT).until(() -> live.audit(id, "request").stream().anyMatch(r -> r.detail().contains("POST /v1/sandboxes/{id}/ttl")));
            open("sandboxes"); // leaves the page: its polling stops
            assertThat(live.server.audit().closeWindowsAndPrune(10_000)).isTrue();
            List<JsonNode> reads = live.audit(id, AuditRecord.AUTHORIZATION).stream().map(r -> JSON.readTree(r.detail()))
                    .filter(d -> d.path("interface").asString().equals("console") && d.path("operation").asString().equals("sandbox.read")).toList();
            JsonNode window = reads.stream().map(d -> d.path("aggregated")).filter(a -> !a.isMissingNode()).findFirst().orElseThrow();
            assertThat(window.path("windowSeconds").asLong()).as("an hour").isEqualTo(3600);
            assertThat(window.path("repeats").asLong()).as("polls counted (20 or more, less the first, in full)").isGreaterThanOrEqualTo(19);
            assertThat(window.path("samples").toString()).as("one batched read a second").contains("GET /v1/sandboxes/{id}")
                    .doesNotContain("/processes", "/egress");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /**
     * Issue 35 in the console: on a gVisor sandbox's page a person pauses it to disk (the page says
     * so, and its processes are stopped on the host) and resumes it, and takes a snapshot with its
     * memory, which the snapshots table says holds its processes.
     */
    @Test
    void aPersonPausesAGvisorSandboxToDiskAndSnapshotsItsMemoryFromTheConsole() throws Exception {
        HttpResponse<String> created = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"strong\"}");
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        String id = JSON.readTree(created.body()).path("id").asString();
        try {
            signIn(live.token());
            open("sandbox/" + id);
            waiting().until(ExpectedConditions.elementToBeClickable(By.id("pause-to-disk"))).click();
            waiting().until(ExpectedConditions.elementToBeClickable(By.id("resume")));
            assertThat(driver.findElement(By.id("sandbox-summary")).getText()).startsWith("paused to disk");
            assertThat(ServerSnapshotTest.processesNaming(id)).as("processes of the sandbox on disk").isEmpty();
            driver.findElement(By.id("resume")).click();
            waiting().until(ExpectedConditions.elementToBeClickable(By.id("snapshot-memory"))).click();
            WebElement row = waiting().until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector("#snapshot-rows tr[data-id^='snap-']")));
            assertThat(row.getText()).contains("and its processes");
            assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id, null).body()).path("state").asString()).isEqualTo("running");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /**
     * Issue 31: the console acts, not only watches. A person creates a sandbox with a profile, a
     * memory limit (one above the profile's ceiling is refused with its rule), a lifetime and
     * labels, runs a shell command and Python code in it and sees their output and exit, pauses and
     * resumes it, snapshots its files, forks a new sandbox from the snapshot (which has the files),
     * and destroys the fork: the first click on Destroy only asks again.
     */
    @Test
    void aPersonCreatesRunsPausesSnapshotsForksAndDestroysFromTheConsole() throws Exception {
        signIn(live.token());
        open("sandboxes");
        new Select(waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("new-profile")))).selectByValue("default");
        // above the profile's ceiling: refused, and the page says by which rule
        driver.findElement(By.id("new-memory")).sendKeys("4g");
        driver.findElement(By.id("new-create")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("sandboxes-error"), "maxLimits"));
        assertThat(driver.findElement(By.id("sandboxes-error")).getText()).contains("memory");
        driver.findElement(By.id("new-memory")).clear();
        driver.findElement(By.id("new-memory")).sendKeys("256m");
        driver.findElement(By.id("new-ttl")).sendKeys("20");
        driver.findElement(By.id("new-labels")).sendKeys("console=made, team=qa");
        driver.findElement(By.id("new-create")).click();
        waiting().until(ExpectedConditions.urlContains("#sandbox/al-"));
        String id = sandboxShown();
        String fork = null;
        try {
            JsonNode made = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id, null).body());
            assertThat(made.path("owner").asString()).isEqualTo("local");
            assertThat(made.path("labels").path("console").asString()).isEqualTo("made");
            assertThat(made.path("labels").path("team").asString()).isEqualTo("qa");
            assertThat(made.path("limits").path("memoryBytes").asLong()).isEqualTo(256L << 20);
            long lifetime = java.time.Duration.between(java.time.Instant.parse(made.path("createdAt").asString()),
                    java.time.Instant.parse(made.path("expiresAt").asString())).toSeconds();
            assertThat(lifetime).as("asked for 20 minutes").isBetween(1190L, 1210L);

            // the output shows as it comes: the first line while the command still runs
            run("echo first; sleep 3; echo hello > /workspace/note.txt; echo $((6*7))");
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("run-output"), "first"));
            assertThat(driver.findElement(By.id("run-result")).getText()).as("while it runs").isEqualTo("running…");
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("run-result"), "exit code 0"));
            assertThat(driver.findElement(By.id("run-output")).getText()).isEqualTo("first\n42");
            new Select(driver.findElement(By.id("run-language"))).selectByValue("python");
            run("import sys; print('to stderr', file=sys.stderr); sys.exit(3)");
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("run-result"), "exit code 3"));
            assertThat(driver.findElement(By.id("run-output")).getText()).isEqualTo("to stderr");
            assertThat(driver.findElement(By.id("run-result")).getAttribute("class")).isEqualTo("error");
            screenshot("sandbox-run");

            waiting().until(ExpectedConditions.elementToBeClickable(By.id("pause"))).click();
            waiting().until(ExpectedConditions.elementToBeClickable(By.id("resume")));
            assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id, null).body()).path("state").asString()).isEqualTo("paused");
            driver.findElement(By.id("resume")).click();
            waiting().until(ExpectedConditions.elementToBeClickable(By.id("pause")));
            assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id, null).body()).path("state").asString()).isEqualTo("running");

            driver.findElement(By.id("snapshot")).click();
            WebElement count = waiting().until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector("#snapshot-rows tr[data-id^='snap-'] input.fork-count")));
            count.clear();
            count.sendKeys("2");
            java.util.Set<String> before = sandboxIds();
            driver.findElement(By.cssSelector("#snapshot-rows tr[data-id^='snap-'] button.fork")).click();
            waiting().until(d -> d.getCurrentUrl().contains("#sandbox/al-") && !d.getCurrentUrl().endsWith(id));
            fork = sandboxShown();
            java.util.Set<String> forks = sandboxIds();
            forks.removeAll(before);
            assertThat(forks).as("two forks, the page showing one").hasSize(2).contains(fork);
            for (String other : forks) {
                if (!other.equals(fork)) {
                    live.raw("DELETE", "/v1/sandboxes/" + other, null);
                }
            }
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.cssSelector("#page h1"), fork));
            run("cat /workspace/note.txt");
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("run-result"), "exit code 0"));
            assertThat(driver.findElement(By.id("run-output")).getText()).as("the snapshot's file in the fork").isEqualTo("hello");

            waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector("#sandbox-actions button.destroy"))).click();
            waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector("#sandbox-actions button.destroy.armed")));
            assertThat(live.raw("GET", "/v1/sandboxes/" + fork, null).statusCode()).as("after the first click only").isEqualTo(200);
            driver.findElement(By.cssSelector("#sandbox-actions button.destroy.armed")).click();
            waiting().until(ExpectedConditions.urlContains("#sandboxes"));
            assertThat(live.raw("GET", "/v1/sandboxes/" + fork, null).statusCode()).isEqualTo(404);
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
            if (fork != null) {
                live.raw("DELETE", "/v1/sandboxes/" + fork, null);
            }
        }
    }

    /**
     * Issue 31: at 360 px wide (a phone) no page spills sideways: the header wraps and a wide table
     * scrolls inside itself.
     */
    @Test
    void theConsoleFitsAPhoneScreen() throws IOException {
        String id = createAsLocal("narrow");
        try {
            driver.manage().window().setSize(new org.openqa.selenium.Dimension(360, 800));
            signIn(live.token());
            // each page with its data drawn: its widest content is there
            java.util.Map<String, By> drawn = new java.util.LinkedHashMap<>();
            drawn.put("overview", By.xpath("//span[@id='count-sandboxes' and text()!='…']"));
            drawn.put("sandboxes", By.cssSelector("#sandbox-rows tr[data-id='" + id + "']"));
            drawn.put("sandbox/" + id, By.cssSelector("#file-rows tr, #egress-rows tr"));
            drawn.put("audit", By.cssSelector("#audit-rows tr"));
            for (var page : drawn.entrySet()) {
                String hash = page.getKey();
                open(hash);
                waiting().until(ExpectedConditions.presenceOfElementLocated(page.getValue()));
                long width = ((Number) driver.executeScript("return document.documentElement.scrollWidth;")).longValue();
                long window = ((Number) driver.executeScript("return window.innerWidth;")).longValue();
                // what sticks out, named in the failure: the elements whose right edge is past the window
                Object over = driver.executeScript("return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right"
                        + " > window.innerWidth).slice(0, 5).map(e => e.tagName + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '')"
                        + " + ' ' + Math.round(e.getBoundingClientRect().right));");
                // scrollWidth is whole pixels, rounded up from the layout's: an edge a fraction of a pixel out reads as one more
                assertThat(width).as("the width of page %s in a %d px window; past it: %s", hash, window, over).isLessThanOrEqualTo(window + 1);
            }
            screenshot("sandbox-narrow");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /**
     * Issue 31: a page left before its data came (a sandbox's page, a terminal's, left 0 to 2 ms after
     * it was opened) drew itself later under the next page's menu item, and a terminal page started
     * its shell all the same. Now the page shown is the one navigated to, every time, and no shell
     * of such a page runs on.
     */
    @Test
    void aPageLeftBeforeItsDataCameDrawsNothingLater() {
        String id = createAsLocal("left-early");
        try {
            signIn(live.token());
            open("overview");
            // the terminal's modules loaded once, so that each try's only wait is the page's fetches, which are counted
            driver.executeAsyncScript("const done = arguments[arguments.length - 1];"
                    + " Promise.all([import('/console/xterm.js'), import('/console/addon-fit.js')]).then(() => done(true));");
            driver.executeScript("window.inflight = 0; const f = window.fetch;"
                    + " window.fetch = (...a) => { window.inflight++; return f(...a).finally(() => window.inflight--); };");
            for (int i = 0; i < 50; i++) {
                String away = (i % 2 == 0 ? "sandbox/" : "terminal/") + id;
                driver.executeScript("location.hash = arguments[0]; setTimeout(() => { location.hash = 'overview'; }, arguments[1]);", away, i % 3);
                waiting().until(d -> driver.getCurrentUrl().endsWith("#overview")
                        && ((Number) driver.executeScript("return window.inflight;")).longValue() == 0);
                assertThat(driver.findElement(By.cssSelector("#page h1")).getText()).as("try %d, away to %s", i, away).isEqualTo("Overview");
                assertThat(driver.findElements(By.id("sandbox-summary"))).as("try %d", i).isEmpty();
                assertThat(driver.findElements(By.id("terminal"))).as("try %d", i).isEmpty();
            }
            await().atMost(WAIT).untilAsserted(() -> assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id + "/processes", null).body())
                    .path("processes")).as("shells of terminal pages left early").noneSatisfy(p ->
                    assertThat(p.path("state").asString()).isEqualTo("running")));
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /**
     * Issue 31: the file browser enters directories and goes back up by its breadcrumbs, downloads a
     * file, deletes one only once asked again, and runs a script just uploaded from its row.
     */
    @Test
    void theFileBrowserEntersDirectoriesDownloadsAndDeletes() throws Exception {
        String id = createAsLocal("files");
        try {
            HttpResponse<String> made = live.raw("POST", "/v1/sandboxes/" + id + "/exec",
                    "{\"command\": [\"sh\", \"-c\", \"mkdir -p /workspace/data/deep && echo inside > /workspace/data/deep/f.txt && echo top > /workspace/data/t.txt\"]}");
            assertThat(JSON.readTree(made.body()).path("exitCode").asInt()).as(made.body()).isZero();
            signIn(live.token());
            open("sandbox/" + id);
            waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector("#file-rows tr[data-path='/workspace/data'] a.enter"))).click();
            waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector("#file-rows tr[data-path='/workspace/data/deep'] a.enter"))).click();
            WebElement file = waiting().until(ExpectedConditions.visibilityOfElementLocated(By.cssSelector("#file-rows tr[data-path='/workspace/data/deep/f.txt']")));
            assertThat(file.getText()).contains("f.txt", "file", "7 B");
            assertThat(driver.findElement(By.id("file-crumbs")).getText()).isEqualTo("/ workspace / data / deep");
            String download = file.findElement(By.cssSelector("a.download")).getAttribute("href");
            HttpResponse<String> got = withCookie("GET", URI.create(download).getRawPath() + "?" + URI.create(download).getRawQuery(), null, cookie());
            assertThat(got.body()).isEqualTo("inside\n");
            screenshot("sandbox-files");
            // up by a breadcrumb, and a file deleted: the first click only asks
            driver.findElement(By.cssSelector("#file-crumbs a[data-path='/workspace/data']")).click();
            String top = "#file-rows tr[data-path='/workspace/data/t.txt']";
            waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector(top + " button.delete-file"))).click();
            WebElement armed = waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector(top + " button.delete-file.armed")));
            assertThat(live.raw("GET", "/v1/sandboxes/" + id + "/files?path=/workspace/data/t.txt", null).statusCode()).isEqualTo(200);
            armed.click();
            waiting().until(ExpectedConditions.invisibilityOfElementLocated(By.cssSelector(top)));
            assertThat(live.raw("GET", "/v1/sandboxes/" + id + "/files?path=/workspace/data/t.txt", null).statusCode()).isEqualTo(404);
            // upload a script into the directory shown and run it from its row
            Path script = Files.createTempFile("console-", ".py");
            try {
                Files.writeString(script, "import os\nprint('ran in', os.getcwd())\n");
                driver.findElement(By.id("upload-file")).sendKeys(script.toAbsolutePath().toString());
                driver.findElement(By.id("upload")).click();
                String uploaded = "#file-rows tr[data-path='/workspace/data/" + script.getFileName() + "'] button.run-file";
                waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector(uploaded))).click();
                waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("run-result"), "exit code 0"));
                assertThat(driver.findElement(By.id("run-output")).getText()).isEqualTo("ran in /workspace/data");
            } finally {
                Files.deleteIfExists(script);
            }
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /**
     * Issue 31: the console follows the system's dark mode; a screenshot of each page is saved in
     * light and in dark, and an audit record's detail opens to its JSON laid out.
     */
    @Test
    void everyPageInLightAndDark() throws Exception {
        String id = createAsLocal("themes");
        try {
            signIn(live.token());
            for (String scheme : List.of("light", "dark")) {
                driver.executeCdpCommand("Emulation.setEmulatedMedia",
                        java.util.Map.of("features", List.of(java.util.Map.of("name", "prefers-color-scheme", "value", scheme))));
                for (String hash : List.of("overview", "sandboxes", "sandbox/" + id, "approvals", "audit", "terminal")) {
                    open(hash);
                    waiting().until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#page h1")));
                    String background = (String) driver.executeScript("return getComputedStyle(document.body).backgroundColor;");
                    int[] rgb = java.util.Arrays.stream(background.replaceAll("[^0-9,]", "").split(",")).mapToInt(Integer::parseInt).toArray();
                    int lightness = (rgb[0] + rgb[1] + rgb[2]) / 3;
                    assertThat(lightness).as("%s page %s: background %s", scheme, hash, background)
                            .is(new org.assertj.core.api.Condition<>(l -> scheme.equals("dark") ? l < 64 : l > 192, scheme));
                    screenshot(hash.replace('/', '-').replaceAll("-al-.*", "") + "-" + scheme);
                }
            }
            open("audit");
            WebElement first = waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector("#audit-rows details.detail summary")));
            first.click();
            String laidOut = driver.findElement(By.cssSelector("#audit-rows details.detail[open] pre")).getText();
            assertThat(laidOut).contains("\n  \"");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /**
     * Issue 31: the Sandboxes table sorts by a column when its heading is clicked, the other way on
     * a second click, and keeps the order as it refreshes; the Audit page reads a log of 2,000 and
     * more records page by page with its Older records button.
     */
    @Test
    void sandboxesSortByAColumnAndTheAuditPagesThroughThousandsOfRecords() throws Exception {
        String a = createAsLocal("sort-a");
        String b = createAsLocal("sort-b");
        try {
            signIn(live.token());
            open("sandboxes");
            waiting().until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#sandbox-rows tr[data-id='" + b + "']")));
            List<String> ascending = java.util.stream.Stream.of(a, b).sorted().toList();
            driver.findElement(By.cssSelector("button.sort[data-sort='Id']")).click();
            waiting().until(d -> rowOrder(a, b).equals(ascending));
            driver.findElement(By.cssSelector("button.sort[data-sort='Id']")).click();
            waiting().until(d -> rowOrder(a, b).equals(ascending.reversed()));
            Thread.sleep(2500); // a refresh of the list (every 2 s) keeps the order chosen
            assertThat(rowOrder(a, b)).isEqualTo(ascending.reversed());
            assertThat(driver.findElement(By.cssSelector("button.sort[data-sort='Id']")).findElement(By.xpath("..")).getAttribute("aria-sort"))
                    .isEqualTo("descending");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + a, null);
            live.raw("DELETE", "/v1/sandboxes/" + b, null);
        }
        // 2,000 records and more, written by the server's own audit log
        for (int i = 0; i < 2000; i++) {
            live.server.audit().record(AuditRecord.AUDIT, "server", null, java.util.Map.of("event", "paging-test", "n", i));
        }
        live.audit(null, null); // written
        driver.findElement(By.id("signout")).click();
        signIn(OPERATOR);
        open("audit");
        By rows = By.cssSelector("#audit-rows tr");
        waiting().until(d -> d.findElements(rows).size() == 500);
        for (int page = 2; page <= 4; page++) {
            int expected = 500 * page;
            driver.findElement(By.id("audit-older")).click();
            waiting().until(d -> d.findElements(rows).size() == expected);
        }
        List<WebElement> shown = driver.findElements(rows);
        long newest = Long.parseLong(shown.getFirst().getAttribute("data-seq"));
        long oldest = Long.parseLong(shown.getLast().getAttribute("data-seq"));
        assertThat(newest - oldest).as("2,000 records in a row, newest first").isEqualTo(1999);
    }

    /** The order of the rows of sandboxes {@code ids} on the Sandboxes page. */
    private List<String> rowOrder(String... ids) {
        List<String> wanted = List.of(ids);
        return driver.findElements(By.cssSelector("#sandbox-rows tr[data-id]")).stream().map(r -> r.getAttribute("data-id"))
                .filter(wanted::contains).toList();
    }

    @Test
    void anotherClientCanNeitherSeeNorTouchTheSandbox() throws Exception {
        String id = createAsLocal("private");
        try {
            signIn(AGENT);
            open("sandboxes");
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("sandbox-rows"), "No sandboxes."));
            assertThat(driver.findElements(By.cssSelector("#sandbox-rows tr[data-id='" + id + "']"))).isEmpty();
            open("sandbox/" + id);
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("page-error"), "does not exist"));
            // nor with the agent's session cookie and CSRF token, sent as the console would send them
            String cookie = cookie();
            HttpResponse<String> destroy = withCookie("DELETE", "/v1/sandboxes/" + id, null, cookie,
                    "X-Airlock-CSRF", csrf(cookie), "Origin", live.uri().toString());
            assertThat(destroy.statusCode()).as(destroy.body()).isEqualTo(404);
            assertThat(live.raw("GET", "/v1/sandboxes/" + id, null).statusCode()).isEqualTo(200);
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /** The text xterm.js shows: its DOM renderer draws each row of the screen as a row element. */
    private String screen() {
        return driver.findElement(By.cssSelector("#terminal .xterm-rows")).getText();
    }

    @Test
    void theTerminalPageRunsAShellInTheSandbox() throws Exception {
        String id = createAsLocal("terminal");
        try {
            signIn(live.token());
            driver.executeScript("window.cspViolations = []; document.addEventListener('securitypolicyviolation',"
                    + " e => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample));");
            open("sandbox/" + id);
            waiting().until(ExpectedConditions.elementToBeClickable(By.id("open-terminal"))).click();
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("terminal-status"), "Ctrl-D"));
            // the shell's first prompt is on the screen: it started once the page was attached
            waiting().until(d -> screen().lines().anyMatch(l -> l.strip().endsWith("$") || l.strip().endsWith("#")));
            // xterm.js's own <style> elements apply (stamped with the page's nonce), and nothing broke the page's CSP
            assertThat((Long) driver.executeScript("return document.querySelectorAll('#terminal style').length;")).isPositive();
            assertThat((Long) driver.executeScript("return [...document.querySelectorAll('#terminal style')].filter(s => s.sheet === null).length;"))
                    .as("xterm.js style elements the CSP refused").isZero();
            assertThat((List<?>) driver.executeScript("return window.cspViolations;")).as("CSP violations").isEmpty();
            // a <style> made from markup has no nonce: still refused
            assertThat((Boolean) driver.executeScript("const d = document.createElement('div'); d.innerHTML = '<style>body { color: red }</style>';"
                    + " document.body.append(d); const applied = d.firstChild.sheet !== null; d.remove(); return applied;")).isFalse();
            WebElement keys = driver.findElement(By.cssSelector("#terminal textarea"));
            keys.sendKeys("echo $((6*7))" + Keys.ENTER);
            // the answer on a line of its own: the command line itself does not contain it
            waiting().until(d -> screen().lines().anyMatch(l -> l.strip().equals("42")));
            screenshot("terminal");
            keys.sendKeys("exit" + Keys.ENTER);
            waiting().until(d -> screen().contains("[process exited 0]"));
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("terminal-status"), "the shell ended"));
            // the shell is a process of the sandbox, ended, like any other
            JsonNode processes = JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id + "/processes", null).body()).path("processes");
            assertThat(processes).anySatisfy(p -> assertThat(p.path("state").asString()).isNotEqualTo("running"));
            // the attach is on the audit log with the origin of the page that opened it
            String origin = live.uri().getScheme() + "://" + live.uri().getAuthority();
            assertThat(live.audit(id, AuditRecord.REQUEST)).anySatisfy(r -> assertThat(JSON.readTree(r.detail()).path("endpoint").asString())
                    .isEqualTo("GET /v1/sandboxes/{id}/processes/{pid}/attach from " + origin));
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    /**
     * Issue 31: a console terminal on a profile with default limits stays open ten minutes, left
     * alone (the per-execution timeout of 30 s does not apply to it; the page's keep-alive holds the
     * socket), and still runs what is typed then. Ten minutes of waiting: the full lane's.
     */
    @Test
    @Tag("full")
    void aTerminalLeftAloneTenMinutesStillRunsCommands() throws Exception {
        HttpResponse<String> r = live.raw("POST", "/v1/sandboxes", "{\"ttlSeconds\": 1200, \"labels\": {\"console\": \"long-terminal\"}}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        String id = JSON.readTree(r.body()).path("id").asString();
        try {
            signIn(live.token());
            open("terminal/" + id);
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("terminal-status"), "Ctrl-D"));
            waiting().until(d -> screen().lines().anyMatch(l -> l.strip().endsWith("$") || l.strip().endsWith("#")));
            long until = System.nanoTime() + Duration.ofMinutes(10).toNanos();
            while (System.nanoTime() < until) {
                Thread.sleep(Duration.ofSeconds(30));
                assertThat(driver.findElement(By.id("terminal-status")).getText()).as("the terminal, while left alone").contains("Ctrl-D");
            }
            WebElement keys = driver.findElement(By.cssSelector("#terminal textarea"));
            keys.sendKeys("echo $((6*7))" + Keys.ENTER);
            waiting().until(d -> screen().lines().anyMatch(l -> l.strip().equals("42")));
            keys.sendKeys("exit" + Keys.ENTER);
            waiting().until(d -> screen().contains("[process exited 0]"));
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    @Test
    void anotherClientCannotOpenATerminalToTheSandbox() throws Exception {
        String id = createAsLocal("no-terminal");
        try {
            signIn(AGENT);
            open("terminal/" + id);
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("page-error"), "does not exist"));
            assertThat(driver.findElements(By.cssSelector("#terminal .xterm-rows"))).isEmpty();
            // nor by asking for the shell as the page would, with the agent's cookie and CSRF token
            String cookie = cookie();
            HttpResponse<String> exec = withCookie("POST", "/v1/sandboxes/" + id + "/exec",
                    "{\"command\": [\"/bin/sh\", \"-i\"], \"background\": true, \"tty\": true}", cookie,
                    "Content-Type", "application/json", "X-Airlock-CSRF", csrf(cookie), "Origin", live.uri().toString());
            assertThat(exec.statusCode()).as(exec.body()).isEqualTo(404);
            assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes/" + id + "/processes", null).body()).path("processes")).isEmpty();
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }

    @Test
    void anOperatorApprovesAPendingCreateAndTheWaitingCallCompletes() throws Exception {
        signIn(OPERATOR);
        open("approvals");
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("approvals-status"), "live"));
        CompletableFuture<HttpResponse<String>> create = gatedCreate();
        WebElement row = pendingRow();
        assertThat(row.getText()).contains("profile 'gated'", "local");
        assertThat(create).isNotDone();
        row.findElement(By.cssSelector("input.reason")).sendKeys("fine by me");
        screenshot("approvals");
        row.findElement(By.cssSelector("button.approve")).click();
        HttpResponse<String> created = create.get(60, TimeUnit.SECONDS);
        assertThat(created.statusCode()).as(created.body()).isEqualTo(201);
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("approval-rows"), "Nothing waits"));
        live.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(created.body()).path("id").asString(), null);
        assertThat(live.audit(null, "approval")).anySatisfy(r -> assertThat(r.detail()).contains("console:operator", "fine by me"));
    }

    @Test
    void anOperatorDeniesAPendingCreateAndTheCallerIsRefused() throws Exception {
        signIn(OPERATOR);
        open("approvals");
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("approvals-status"), "live"));
        CompletableFuture<HttpResponse<String>> create = gatedCreate();
        WebElement row = pendingRow();
        row.findElement(By.cssSelector("input.reason")).sendKeys("not today");
        row.findElement(By.cssSelector("button.deny")).click();
        HttpResponse<String> refused = create.get(60, TimeUnit.SECONDS);
        assertThat(refused.statusCode()).as(refused.body()).isEqualTo(403);
        assertThat(refused.body()).contains("denied by console:operator", "not today");
    }

    @Test
    void aClientCannotDecideItsOwnRequestInTheConsole() throws Exception {
        signIn(live.token());
        open("approvals");
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("approvals-status"), "live"));
        CompletableFuture<HttpResponse<String>> create = gatedCreate();
        WebElement row = pendingRow();
        String approval = row.getAttribute("data-id");
        row.findElement(By.cssSelector("button.approve")).click();
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("approvals-error"), "separation of duties"));
        assertThat(create).isNotDone();
        HttpResponse<String> denied = live.raw("POST", "/v1/approvals/" + approval + "/deny", "{}", OPERATOR);
        assertThat(denied.statusCode()).as(denied.body()).isEqualTo(200);
        assertThat(create.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(403);
    }

    @Test
    void theAuditLogFiltersByTheSandboxAndExportsJsonLines() throws Exception {
        String id = createAsLocal("audited");
        live.raw("DELETE", "/v1/sandboxes/" + id, null);
        signIn(OPERATOR);
        open("audit");
        waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("audit-verdict"), "Chain verified"));
        driver.findElement(By.id("audit-sandbox")).sendKeys(id);
        driver.findElement(By.id("audit-kind")).sendKeys("lifecycle");
        driver.findElement(By.id("audit-apply")).click();
        waiting().until(d -> {
            List<WebElement> rows = d.findElements(By.cssSelector("#audit-rows tr"));
            return !rows.isEmpty() && rows.stream().allMatch(r -> r.getText().contains(id) && r.getText().contains("lifecycle"));
        });
        assertThat(driver.findElement(By.id("audit-rows")).getText()).contains("\"event\":\"created\"", "\"event\":\"destroyed\"");
        String export = driver.findElement(By.id("audit-export")).getAttribute("href");
        assertThat(export).contains("format=jsonl", "sandbox=" + id);
        HttpResponse<String> lines = withCookie("GET", URI.create(export).getRawPath() + "?" + URI.create(export).getRawQuery(), null, cookie());
        assertThat(lines.statusCode()).as(lines.body()).isEqualTo(200);
        assertThat(lines.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("application/x-ndjson"));
        List<String> all = lines.body().lines().toList();
        assertThat(all).isNotEmpty().allSatisfy(l -> {
            JsonNode n = JSON.readTree(l);
            assertThat(n.path("sandbox").asString()).isEqualTo(id);
            assertThat(n.path("kind").asString()).isEqualTo("lifecycle");
        });
        // the client and time filters, as the page sends them
        JsonNode own = JSON.readTree(withCookie("GET", "/v1/audit?client=operator&limit=50", null, cookie()).body()).path("records");
        assertThat(own).isNotEmpty().allSatisfy(r -> assertThat(r.path("actor").asString()).startsWith("operator@"));
        JsonNode future = JSON.readTree(withCookie("GET", "/v1/audit?since=2999-01-01T00:00:00Z", null, cookie()).body()).path("records");
        assertThat(future).isEmpty();
        JsonNode past = JSON.readTree(withCookie("GET", "/v1/audit?until=2000-01-01T00:00:00Z", null, cookie()).body()).path("records");
        assertThat(past).isEmpty();
        assertThat(withCookie("GET", "/v1/audit?since=yesterday", null, cookie()).statusCode()).isEqualTo(400);

        // pages: following 'next' from the newest page of 7 reads the records in a row, none twice, to the oldest
        List<Long> paged = new java.util.ArrayList<>();
        String before = "";
        for (int pages = 0; pages < 5; pages++) {
            JsonNode page = JSON.readTree(withCookie("GET", "/v1/audit?limit=7" + before, null, cookie()).body());
            List<Long> seqs = new java.util.ArrayList<>();
            page.path("records").forEach(r -> seqs.add(r.path("seq").asLong()));
            assertThat(seqs).as("page %d, oldest first", pages).hasSize(7).isSorted();
            paged.addAll(0, seqs);
            assertThat(page.path("next").asLong()).isEqualTo(seqs.getFirst());
            before = "&before=" + page.path("next").asLong();
        }
        assertThat(paged.getLast() - paged.getFirst()).as("35 records in a row").isEqualTo(34);
        JsonNode oldest = JSON.readTree(withCookie("GET", "/v1/audit?limit=7&before=3", null, cookie()).body());
        assertThat(oldest.path("records")).hasSize(2);
        assertThat(oldest.path("next").isNull()).as("the oldest page").isTrue();
        assertThat(withCookie("GET", "/v1/audit?before=-3", null, cookie()).statusCode()).isEqualTo(400);
        // the search: the records that hold the text, wherever in them
        JsonNode found = JSON.readTree(withCookie("GET", "/v1/audit?q=" + id, null, cookie()).body()).path("records");
        assertThat(found).isNotEmpty().allSatisfy(r -> assertThat(r.toString()).contains(id));
        List<String> kinds = new java.util.ArrayList<>();
        found.forEach(r -> kinds.add(r.path("kind").asString()));
        assertThat(kinds).contains("lifecycle", "request");
        assertThat(withCookie("GET", "/v1/audit?q=" + "x".repeat(201), null, cookie()).statusCode()).isEqualTo(400);
        // the page's search field
        open("audit");
        waiting().until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#audit-rows tr")));
        driver.findElement(By.id("audit-text")).sendKeys(id);
        driver.findElement(By.id("audit-apply")).click();
        waiting().until(d -> d.findElements(By.cssSelector("#audit-rows tr")).stream().allMatch(r -> r.getText().contains(id)));
    }

    @Test
    void crossSiteRequestsWithTheCookieAreRefused() throws Exception {
        signIn(live.token());
        String cookie = cookie();
        String csrf = csrf(cookie);
        String local = live.uri().toString();
        // a cross-site form post: the browser sends the cookie (were it not SameSite), but no CSRF header, from a foreign origin
        HttpResponse<String> form = withCookie("POST", "/v1/sandboxes", "profile=default", cookie,
                "Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example");
        assertThat(form.statusCode()).as(form.body()).isEqualTo(403);
        HttpResponse<String> noToken = withCookie("POST", "/v1/sandboxes", "{}", cookie, "Content-Type", "application/json", "Origin", local);
        assertThat(noToken.statusCode()).as(noToken.body()).isEqualTo(403);
        assertThat(JSON.readTree(noToken.body()).path("error").path("code").asString()).isEqualTo("csrf");
        HttpResponse<String> wrongToken = withCookie("POST", "/v1/sandboxes", "{}", cookie, "Content-Type", "application/json",
                "X-Airlock-CSRF", csrf + "x", "Origin", local);
        assertThat(wrongToken.statusCode()).as(wrongToken.body()).isEqualTo(403);
        HttpResponse<String> foreign = withCookie("POST", "/v1/sandboxes", "{}", cookie, "Content-Type", "application/json",
                "X-Airlock-CSRF", csrf, "Origin", "http://evil.example");
        assertThat(foreign.statusCode()).as(foreign.body()).isEqualTo(403);
        assertThat(foreign.body()).contains("Origin", "not allowed");
        HttpResponse<String> foreignSignIn = http.send(HttpRequest.newBuilder(URI.create(local + "/console/session"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"token\": \"" + live.token() + "\"}"))
                .header("Content-Type", "application/json").header("Origin", "http://evil.example").build(), HttpResponse.BodyHandlers.ofString());
        assertThat(foreignSignIn.statusCode()).as(foreignSignIn.body()).isEqualTo(403);
        assertThat(foreignSignIn.headers().firstValue("Set-Cookie")).isEmpty();
        // nothing was created by any of them; the same request from the console's own page is accepted
        assertThat(JSON.readTree(live.raw("GET", "/v1/sandboxes", null).body()).path("sandboxes")).isEmpty();
        HttpResponse<String> own = withCookie("POST", "/v1/sandboxes", "{}", cookie, "Content-Type", "application/json",
                "X-Airlock-CSRF", csrf, "Origin", local);
        assertThat(own.statusCode()).as(own.body()).isEqualTo(201);
        live.raw("DELETE", "/v1/sandboxes/" + JSON.readTree(own.body()).path("id").asString(), null);
        // the console's page is served with a strict policy and may not be framed
        HttpResponse<String> page = http.send(HttpRequest.newBuilder(URI.create(local + "/")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(page.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(v -> assertThat(v).contains("default-src 'self'",
                "frame-ancestors 'none'").doesNotContain("unsafe-inline"));
        // its <style> elements apply with this response's nonce only, on the page's link for its script: a new one each time
        String nonce = page.headers().firstValue("Content-Security-Policy").orElseThrow().replaceAll(".*style-src 'self' 'nonce-([A-Za-z0-9_-]{22})';.*", "$1");
        assertThat(page.body()).contains("nonce=\"" + nonce + "\"");
        HttpResponse<String> again = http.send(HttpRequest.newBuilder(URI.create(local + "/")).build(), HttpResponse.BodyHandlers.ofString());
        assertThat(again.headers().firstValue("Content-Security-Policy").orElseThrow()).contains("'nonce-").doesNotContain(nonce);
        assertThat(page.headers().firstValue("X-Frame-Options")).hasValue("DENY");
        assertThat(page.headers().firstValue("X-Content-Type-Options")).hasValue("nosniff");
    }

    @Test
    void afterSignOutTheCookieNoLongerWorks() throws Exception {
        signIn(live.token());
        String cookie = cookie();
        assertThat(withCookie("GET", "/v1/sandboxes", null, cookie).statusCode()).isEqualTo(200);
        open("overview");
        waiting().until(ExpectedConditions.elementToBeClickable(By.id("signout"))).click();
        waiting().until(ExpectedConditions.visibilityOfElementLocated(By.id("signin")));
        assertThat(driver.manage().getCookieNamed("airlock_session")).isNull();
        HttpResponse<String> after = withCookie("GET", "/v1/sandboxes", null, cookie);
        assertThat(after.statusCode()).as(after.body()).isEqualTo(401);
        assertThat(after.body()).contains("sign in again");
        // both ends of the session are on the audit log, filed under the client and the console
        assertThat(live.audit(null, "request")).filteredOn(r -> r.actor().equals("local@console"))
                .extracting(r -> JSON.readTree(r.detail()).path("endpoint").asString())
                .contains("POST /console/session", "DELETE /console/session");
    }

    @Test
    void anOperatorSeesAndDestroysAnAgentsSandbox() throws Exception {
        HttpResponse<String> made = live.raw("POST", "/v1/sandboxes", "{\"labels\": {\"console\": \"agents\"}}", AGENT);
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        String id = JSON.readTree(made.body()).path("id").asString();
        try {
            signIn(OPERATOR);
            open("sandboxes");
            By row = By.cssSelector("#sandbox-rows tr[data-id='" + id + "']");
            WebElement shown = waiting().until(ExpectedConditions.visibilityOfElementLocated(row));
            assertThat(shown.getText()).contains("agent", "console=agents");
            screenshot("sandboxes-operator");
            // its page: the operator sees its processes and files, but no output or download buttons of another's
            shown.findElement(By.linkText(id)).click();
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("sandbox-summary"), "owner agent"));
            open("sandboxes");
            destroyFrom(id);
            assertThat(live.raw("GET", "/v1/sandboxes/" + id, null, AGENT).statusCode()).isEqualTo(404);
            assertThat(live.audit(id, "lifecycle")).anySatisfy(r -> {
                assertThat(r.actor()).isEqualTo("operator@console");
                assertThat(r.detail()).contains("\"event\":\"destroyed\"");
            });
            // the agent, signed in, sees nothing of it, nor of the local client's sandbox
            String other = createAsLocal("not-the-agents");
            try {
                driver.manage().deleteAllCookies();
                signIn(AGENT);
                open("sandboxes");
                waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("sandbox-rows"), "No sandboxes."));
                assertThat(driver.findElements(By.cssSelector("#sandbox-rows tr[data-id='" + other + "']"))).isEmpty();
            } finally {
                live.raw("DELETE", "/v1/sandboxes/" + other, null);
            }
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null, AGENT);
        }
    }

    @Test
    void openAPreviewOfAWebServerRunningInsideTheSandbox() throws Exception {
        HttpResponse<String> made = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"web\"}");
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        String id = JSON.readTree(made.body()).path("id").asString();
        String base = "/v1/sandboxes/" + id;
        try {
            HttpResponse<String> put = live.raw("PUT", base + "/files?path=/workspace/site/served-from-inside.txt", "hello");
            assertThat(put.statusCode()).as(put.body()).isEqualTo(201);
            HttpResponse<String> started = live.raw("POST", base + "/exec", "{\"command\": [\"sh\", \"-c\", "
                    + "\"cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1\"], \"background\": true}");
            assertThat(started.statusCode()).as(started.body()).isEqualTo(202);
            await().atMost(WAIT).until(() -> live.raw("GET", base + "/ports/8000/", null).statusCode() == 200);

            signIn(live.token());
            open("sandbox/" + id);
            String console = driver.getWindowHandle();
            waiting().until(ExpectedConditions.elementToBeClickable(By.id("open-preview-8000"))).click();
            waiting().until(d -> d.getWindowHandles().size() == 2);
            String preview = driver.getWindowHandles().stream().filter(h -> !h.equals(console)).findFirst().orElseThrow();
            driver.switchTo().window(preview);
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.tagName("body"), "Directory listing for /"));
            assertThat(driver.findElement(By.tagName("body")).getText()).contains("served-from-inside.txt");
            assertThat(driver.getCurrentUrl()).contains("/preview/prv_");
            // the page runs with an opaque origin (CSP sandbox) and without an opener: it cannot reach the console
            assertThat(driver.executeScript("return window.origin")).isEqualTo("null");
            assertThat(driver.executeScript("return window.opener === null")).isEqualTo(true);
            screenshot("preview");
            driver.switchTo().window(console);
            assertThat(driver.findElement(By.id("preview-links")).getText()).contains("Port 8000");
        } finally {
            live.raw("DELETE", base, null);
        }
    }

    @Test
    void theSandboxPageShowsUseExtendsUploadsFollowsOutputAndListsEgress() throws Exception {
        HttpResponse<String> made = live.raw("POST", "/v1/sandboxes", "{\"profile\": \"net\"}");
        assertThat(made.statusCode()).as(made.body()).isEqualTo(201);
        JsonNode sandbox = JSON.readTree(made.body());
        String id = sandbox.path("id").asString();
        String base = "/v1/sandboxes/" + id;
        try {
            // a refused connection attempt for the egress table, and a process that writes for a while
            HttpResponse<String> refused = live.raw("POST", base + "/exec", "{\"command\": [\"python3\", \"-c\", "
                    + "\"import urllib.request\\ntry:\\n urllib.request.urlopen('http://blocked.example/')\\nexcept Exception as e:\\n print(e)\"],"
                    + " \"env\": {\"NO_PROXY\": \"\", \"no_proxy\": \"\"}}");
            assertThat(refused.statusCode()).as(refused.body()).isEqualTo(200);
            HttpResponse<String> started = live.raw("POST", base + "/exec",
                    "{\"command\": [\"sh\", \"-c\", \"for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 1; done\"], \"background\": true}");
            assertThat(started.statusCode()).as(started.body()).isEqualTo(202);

            signIn(live.token());
            open("sandboxes");
            By row = By.cssSelector("#sandbox-rows tr[data-id='" + id + "']");
            WebElement shown = waiting().until(ExpectedConditions.visibilityOfElementLocated(row));
            // CPU and memory from the sandbox's cgroup (the OCI tier reads it)
            waiting().until(d -> !d.findElement(row).findElement(By.cssSelector("td.memory")).getText().equals("—"));
            assertThat(driver.findElement(row).findElement(By.cssSelector("td.memory")).getText()).containsPattern("\\d+(\\.\\d)? (B|KiB|MiB|GiB)");
            assertThat(driver.findElement(row).findElement(By.cssSelector("td.cpu")).getText()).containsPattern("\\d+\\.\\d\\d s");
            // extend: ten more minutes than it had
            java.time.Instant before = java.time.Instant.parse(sandbox.path("expiresAt").asString());
            shown.findElement(By.cssSelector("button.extend")).click();
            await().atMost(WAIT).until(() -> java.time.Instant.parse(JSON.readTree(live.raw("GET", base, null).body()).path("expiresAt").asString())
                    .isAfter(before.plusSeconds(300)));

            open("sandbox/" + id);
            // live output of the running background process
            waiting().until(ExpectedConditions.elementToBeClickable(By.cssSelector("#process-rows button.show-output"))).click();
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("process-output"), "line 1"));
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("process-output"), "line 4"));
            assertThat(driver.findElement(By.id("output-title")).getText()).contains("Output of");
            // upload a file into /workspace
            Path file = Files.createTempFile("console-upload-", ".txt");
            try {
                Files.writeString(file, "uploaded from the console\n");
                driver.findElement(By.id("upload-file")).sendKeys(file.toAbsolutePath().toString());
                driver.findElement(By.id("upload")).click();
                String name = file.getFileName().toString();
                waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("file-rows"), name));
                HttpResponse<String> back = live.raw("GET", base + "/files?path=/workspace/" + name, null);
                assertThat(back.statusCode()).as(back.body()).isEqualTo(200);
                assertThat(back.body()).isEqualTo("uploaded from the console\n");
            } finally {
                Files.deleteIfExists(file);
            }
            // the refused attempt is in its egress records
            waiting().until(ExpectedConditions.textToBePresentInElementLocated(By.id("egress-rows"), "blocked.example"));
            assertThat(driver.findElement(By.id("egress-rows")).getText()).contains("refused");
            screenshot("sandbox");
        } finally {
            live.raw("DELETE", base, null);
        }
    }

    @Test
    void theOverviewChartsTheLastHourFromTheServersMetrics() throws Exception {
        // some activity: a sandbox live, an execution, a refusal
        String id = createAsLocal("charted");
        try {
            assertThat(live.raw("POST", "/v1/sandboxes/" + id + "/exec", "{\"command\": [\"true\"]}").statusCode()).isEqualTo(200);
            HttpResponse<String> refused = live.raw("GET", "/v1/metrics/history", null, OPERATOR);
            assertThat(refused.statusCode()).as("the history is the metrics operation's: " + refused.body()).isEqualTo(403);
            signIn(live.token());
            open("overview");
            for (String chart : List.of("chart-sandboxes", "chart-executions", "chart-refusals", "chart-egress")) {
                waiting().until(ExpectedConditions.presenceOfElementLocated(By.cssSelector("#" + chart + " canvas")));
            }
            // the server's samples and the reading of now: at least two points, the sandbox counted in the last
            waiting().until(d -> Integer.parseInt(d.findElement(By.id("chart-sandboxes")).getAttribute("data-points")) >= 2);
            assertThat(Long.parseLong(driver.findElement(By.id("chart-sandboxes")).getAttribute("data-last"))).isGreaterThanOrEqualTo(1);
            assertThat(driver.findElement(By.id("charts-error")).getText()).isEmpty();
            JsonNode h = JSON.readTree(live.raw("GET", "/v1/metrics/history", null).body());
            assertThat(h.path("intervalSeconds").asInt()).isEqualTo(10);
            assertThat(h.path("time").size()).isGreaterThanOrEqualTo(2).isEqualTo(h.path("executionsPerMinute").size());
            long refusals = 0;
            for (JsonNode n : h.path("refusals")) {
                refusals += n.asLong();
            }
            assertThat(refusals).as("the operator's refused read counted").isGreaterThanOrEqualTo(1);
            // uPlot's files come from this server (the WebJar), under the console's own policy
            HttpResponse<String> lib = http.send(HttpRequest.newBuilder(URI.create(live.uri() + "/console/vendor/uplot.js")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(lib.statusCode()).isEqualTo(200);
            assertThat(lib.headers().firstValue("Content-Type")).hasValueSatisfying(t -> assertThat(t).startsWith("text/javascript"));
            assertThat(lib.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(v -> assertThat(v).contains("default-src 'self'"));
            assertThat(http.send(HttpRequest.newBuilder(URI.create(live.uri() + "/console/vendor/other.js")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(404);
            screenshot("overview");
        } finally {
            live.raw("DELETE", "/v1/sandboxes/" + id, null);
        }
    }
}
