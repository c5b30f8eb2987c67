package io.fencepost.examples;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Keeps the package structure honest across every module of the reactor (this module depends on
 * all the others, so their main classes are on its classpath).
 *
 * <p>Layering: a public package ({@code io.fencepost}, {@code io.fencepost.kafka}, ...) is what users
 * import. An {@code internal} package is the implementation beneath it and must not depend back on
 * any public package, so the dependency always runs public to internal and cannot form a cycle; and
 * no public package reaches into another module's {@code internal} package.
 */
class ArchitectureTest {

  private static JavaClasses classes;

  @BeforeAll
  static void importClasses() {
    classes = new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
        .importPackages("io.fencepost");
  }

  @Test
  void packagesFormNoCycles() {
    slices().matching("io.fencepost.(**)").should().beFreeOfCycles().check(classes);
  }

  @Test
  void internalPackagesDoNotDependOnTheirOwnPublicPackage() {
    for (String module : PUBLIC_PACKAGES) {
      noClasses().that().resideInAPackage(module + ".internal..")
          .should().dependOnClassesThat().resideInAPackage(module)
          .because("the public API is a facade over internal code; the reverse edge makes a cycle")
          .allowEmptyShould(true)
          .check(classes);
    }
  }

  @Test
  void publicPackagesDoNotReachIntoOtherModulesInternals() {
    for (String module : PUBLIC_PACKAGES) {
      noClasses().that().resideInAPackage(module)
          .should().dependOnClassesThat(internalOfAnotherModule(module))
          .because("users import only public packages, and so does every other module")
          .allowEmptyShould(true)
          .check(classes);
    }
  }

  @Test
  void publicSignaturesExposeNoInternalType() {
    for (String module : PUBLIC_PACKAGES) {
      com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods()
          .that().areDeclaredInClassesThat().resideInAPackage(module)
          .and().arePublic()
          .should(new com.tngtech.archunit.lang.ArchCondition<com.tngtech.archunit.core.domain.JavaMethod>(
              "not use an internal type in their signature") {
            @Override
            public void check(com.tngtech.archunit.core.domain.JavaMethod method,
                com.tngtech.archunit.lang.ConditionEvents events) {
              java.util.List<com.tngtech.archunit.core.domain.JavaClass> types = new java.util.ArrayList<>(
                  method.getRawParameterTypes());
              types.add(method.getRawReturnType());
              for (com.tngtech.archunit.core.domain.JavaClass t : types) {
                if (t.getPackageName().contains(".internal")) {
                  events.add(com.tngtech.archunit.lang.SimpleConditionEvent.violated(method,
                      method.getFullName() + " exposes internal type " + t.getName()));
                }
              }
            }
          })
          .allowEmptyShould(true)
          .check(classes);
    }
  }

  private static final String[] PUBLIC_PACKAGES = {"io.fencepost", "io.fencepost.errors", "io.fencepost.serialization",
      "io.fencepost.jdbc", "io.fencepost.kafka",
      "io.fencepost.testkit", "io.fencepost.examples", "io.fencepost.benchmarks"};

  private static com.tngtech.archunit.base.DescribedPredicate<com.tngtech.archunit.core.domain.JavaClass>
      internalOfAnotherModule(String module) {
    return com.tngtech.archunit.base.DescribedPredicate.describe("an internal class of another module than " + module,
        c -> c.getPackageName().startsWith("io.fencepost")
            && c.getPackageName().contains(".internal")
            && !c.getPackageName().startsWith(module + ".internal"));
  }
}
