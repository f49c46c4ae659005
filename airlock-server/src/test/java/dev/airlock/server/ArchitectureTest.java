package dev.airlock.server;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideOutsideOfPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

/**
 * The server's architecture as rules (README, "How it works"): each package's {@code package-info.java}
 * says what it owns and may use; these rules fail the build when a class reaches where its package
 * may not.
 *
 * <pre>
 *   dev.airlock.server            assembly: builds the service and the doors from the configuration
 *   rest, mcp, console, e2b       doors: authenticate, translate a wire format into commands
 *   http, wire                    what the doors share: HTTP guards and sessions; JSON fields, limits, network
 *   sandbox                       the service: runs every command through the controls to its handler
 *   files, snapshot, interpreter, terminal   one feature each, used by the service's handlers
 *   live, control                 the sandboxes held now; the controls around every command
 *   command, policy, audit, output, store, config, cluster   the command API and what everything stands on
 * </pre>
 */
class ArchitectureTest {

    private static final String SERVER = "dev.airlock.server";
    private static final String[] DOORS = {SERVER + ".rest..", SERVER + ".mcp..", SERVER + ".console..", SERVER + ".e2b.."};
    private static final String[] FEATURES = {SERVER + ".files..", SERVER + ".snapshot..", SERVER + ".interpreter..",
            SERVER + ".terminal.."};

    /**
     * What every door may use of the server: the command API (the commands, their results and the
     * service's door-facing interface), who is asking (policy), the refusal a control answers with,
     * the request's audit record and the audit records and verdict that commands answer with, the
     * output files an execution spilled, and the helpers the doors share. Nothing else: a door that
     * reached a feature or a sandbox directly could skip a control.
     */
    private static final DescribedPredicate<JavaClass> COMMAND_API_AND_HELPERS =
            resideInAnyPackage(SERVER + ".command..", SERVER + ".policy..", SERVER + ".http..", SERVER + ".wire..",
                    SERVER + ".config..", SERVER + ".output..")
                    .or(belongToAnyOf(dev.airlock.server.control.Refused.class, dev.airlock.server.control.Refusal.class,
                            dev.airlock.server.audit.Audit.class, dev.airlock.server.audit.AuditRecord.class,
                            dev.airlock.server.audit.AuditReader.Verdict.class))
                    .or(resideOutsideOfPackage(SERVER + ".."))
                    .as("the command API, the callers' policy, a refusal, the request's audit record, the shared JSON and HTTP"
                            + " helpers, or a class outside the server");

    private static JavaClasses server;

    @BeforeAll
    static void importTheServer() {
        server = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS).importPackages(SERVER);
    }

    @Test
    void restUsesOnlyTheCommandApi() {
        door("rest").check(server);
    }

    @Test
    void mcpUsesOnlyTheCommandApi() {
        door("mcp").check(server);
    }

    @Test
    void consoleUsesOnlyTheCommandApi() {
        door("console").check(server);
    }

    @Test
    void e2bUsesOnlyTheCommandApi() {
        door("e2b").check(server);
    }

    @Test
    void nothingBelowTheAssemblyUsesADoor() {
        noClasses()
            .that().resideOutsideOfPackages(DOORS).and().resideOutsideOfPackage(SERVER)
            .should().dependOnClassesThat().resideInAnyPackage(DOORS)
            .because("a door is an entry from outside: the service, the features and what they stand on work without any").check(server);
    }

    @Test
    void featuresDoNotUseTheService() {
        noClasses()
            .that().resideInAnyPackage(FEATURES)
            .should().dependOnClassesThat().resideInAnyPackage(SERVER + ".sandbox..")
            .because("the service dispatches to the features; a feature that called back into it would go around its controls").check(server);
    }

    @Test
    void onlyTheAssemblyUsesTheAssembly() {
        noClasses()
            .that().resideOutsideOfPackage(SERVER)
            .should().dependOnClassesThat().resideInAPackage(SERVER)
            .because("the root package builds the server from its parts; no part depends on how it is built").check(server);
    }

    @Test
    void packagesFormNoCycle() {
        slices().matching(SERVER + ".(*)..").should().beFreeOfCycles().check(server);
    }

    @Test
    void theServerUsesNoDriver() {
        noClasses()
            .should().dependOnClassesThat().resideInAnyPackage("dev.airlock.oci..", "dev.airlock.microvm..")
            .because("the server finds its drivers by name through DriverProvider (ARCHITECTURE.md, section 3): it knows no driver").check(server);
    }

    private static ArchRule door(String name) {
        return classes().that().resideInAPackage(SERVER + "." + name + "..")
                .should().onlyDependOnClassesThat(COMMAND_API_AND_HELPERS.or(resideInAnyPackage(SERVER + "." + name + "..")))
                .as("the " + name + " door uses only the command API, the shared helpers and its own package");
    }
}
