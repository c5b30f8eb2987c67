package io.fencepost.tools;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.codeUnits;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import io.fencepost.annotation.InternalApi;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Keeps the package structure honest across every module of the reactor. This module depends on all
 * the others but the benchmarks; their classes arrive as directories or as jars (a reactor build hands over the
 * packaged jars), and both are imported. {@link #everyModuleWasImported} fails if a module's classes
 * were not found, so the rules below cannot pass by checking nothing.
 *
 * <p>Layering: a public package ({@code io.fencepost}, {@code io.fencepost.kafka}, ...) is what users
 * import; its module's {@code internal} package is the implementation beneath it. No public signature
 * exposes an internal type, no module reaches into another module's internals, and internal code
 * uses only the public types that are leaves (value types such as {@code PartitionId} that depend on
 * no internal code), so no chain of classes runs public → internal → public. A public type or member
 * marked {@link InternalApi} is shared by the modules, not offered to applications: it may name an
 * internal type, and the examples (application code) may not use it. This test lives in the tools
 * module because that is the one module that depends on every other one (the benchmarks aside).
 */
class ArchitectureTest {

  /** Each module's public packages, and the internal package that implements them. */
  private static final Map<String, List<String>> MODULES = Map.of(
      "io.fencepost.internal", List.of("io.fencepost", "io.fencepost.errors", "io.fencepost.annotation"),
      "io.fencepost.jdbc.internal", List.of("io.fencepost.jdbc"),
      "io.fencepost.kafka.internal", List.of("io.fencepost.kafka"),
      "io.fencepost.management.internal", List.of("io.fencepost.management", "io.fencepost.management.http"),
      "io.fencepost.testkit.internal", List.of("io.fencepost.testkit"),
      "io.fencepost.embedded.internal", List.of("io.fencepost.embedded"),
      "io.fencepost.reconciliation.internal", List.of("io.fencepost.reconciliation"),
      "io.fencepost.examples.internal", List.of("io.fencepost.examples"),
      "io.fencepost.tools.internal", List.of("io.fencepost.tools"));

  private static JavaClasses classes;

  @BeforeAll
  static void importClasses() {
    classes = new ClassFileImporter()
        .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .withImportOption(location -> !location.isJar() || location.contains("fencepost-"))
        .importPackages("io.fencepost");
  }

  @Test
  void everyModuleWasImported() {
    for (String pkg : List.of("io.fencepost", "io.fencepost.internal", "io.fencepost.jdbc", "io.fencepost.kafka",
        "io.fencepost.kafka.internal", "io.fencepost.management.internal", "io.fencepost.testkit", "io.fencepost.embedded",
        "io.fencepost.reconciliation", "io.fencepost.examples",
        "io.fencepost.tools")) {
      long n = classes.stream().filter(c -> c.getPackageName().equals(pkg)).count();
      assertTrue(n >= 3, pkg + ": only " + n + " classes imported; the rules would check nothing there");
    }
    assertTrue(classes.contain("io.fencepost.PartitionBehavior"), "core's package-private classes are imported");
    assertTrue(classes.contain("io.fencepost.kafka.RunningPipeline"), "the connectors module's classes are imported");
  }

  @Test
  void subPackagesFormNoCycles() {
    slices().matching("io.fencepost.(**)").should().beFreeOfCycles().check(classes);
  }

  @Test
  void internalCodeUsesOnlyLeafTypesOfThePublicPackages() {
    noClasses().that().resideInAPackage("io.fencepost..internal..")
        .should().dependOnClassesThat(publicAndDependingOnInternalCode())
        .because("the public API is a facade over internal code; internal code may use its value types, never "
            + "a public class that itself uses internal code (that edge makes a cycle of classes)")
        .check(classes);
  }

  @Test
  void publicPackagesDoNotReachIntoOtherModulesInternals() {
    MODULES.forEach((internal, publicPackages) -> {
      for (String pkg : publicPackages) {
        noClasses().that().resideInAPackage(pkg)
            .should().dependOnClassesThat(internalOtherThan(internal))
            .because("users import only public packages, and so does every other module")
            .check(classes);
      }
    });
  }

  @Test
  void publicSignaturesExposeNoInternalType() {
    codeUnits().that().areDeclaredInClassesThat().arePublic()
        .and().areDeclaredInClassesThat().resideOutsideOfPackage("io.fencepost..internal..")
        .and().arePublic()
        .should(new ArchCondition<JavaCodeUnit>("not use an internal type in their signature") {
          @Override
          public void check(JavaCodeUnit unit, ConditionEvents events) {
            if (!unit.getOwner().getModifiers().contains(JavaModifier.PUBLIC) || isHiddenNestedType(unit.getOwner())
                || isInternalApi(unit)) {
              return;
            }
            List<JavaClass> types = new ArrayList<>(unit.getRawParameterTypes());
            types.add(unit.getRawReturnType());
            for (JavaClass t : types) {
              if (isInternal(t.getBaseComponentType())) {
                events.add(SimpleConditionEvent.violated(unit,
                    unit.getFullName() + " exposes internal type " + t.getName()));
              }
            }
          }
        })
        .check(classes);
  }

  /**
   * Applications (the examples stand for them) use no INTERNAL API: no {@link InternalApi} type, and
   * no {@link InternalApi} method, constructor or field of a public type.
   */
  @Test
  void applicationsUseNoInternalApi() {
    noClasses().that().resideInAPackage("io.fencepost.examples..")
        .should().dependOnClassesThat(internalApiType())
        .orShould().accessTargetWhere(DescribedPredicate.describe("the target is INTERNAL API",
            access -> access.getTarget().isAnnotatedWith(InternalApi.class)
                || internalApiType().test(access.getTargetOwner())))
        .because("INTERNAL API is shared by Fencepost's modules and may change in any release")
        .check(classes);
  }

  /** INTERNAL API itself, or a member of a type that is (nested types count their enclosing ones). */
  private static boolean isInternalApi(JavaCodeUnit unit) {
    return unit.isAnnotatedWith(InternalApi.class) || internalApiType().test(unit.getOwner());
  }

  private static DescribedPredicate<JavaClass> internalApiType() {
    return DescribedPredicate.describe("an INTERNAL API type", ArchitectureTest::isInternalApiType);
  }

  private static boolean isInternalApiType(JavaClass c) {
    return c.isAnnotatedWith(InternalApi.class) || c.getEnclosingClass().map(ArchitectureTest::isInternalApiType)
        .orElse(false);
  }

  /** A public nested type of a class users cannot see is not reachable either. */
  private static boolean isHiddenNestedType(JavaClass c) {
    return c.getEnclosingClass().map(outer -> !outer.getModifiers().contains(JavaModifier.PUBLIC)
        || isHiddenNestedType(outer)).orElse(false);
  }

  private static boolean isInternal(JavaClass c) {
    return c.getPackageName().startsWith("io.fencepost") && c.getPackageName().contains(".internal");
  }

  private static DescribedPredicate<JavaClass> publicAndDependingOnInternalCode() {
    return DescribedPredicate.describe("a public class that depends on internal code",
        c -> c.getPackageName().startsWith("io.fencepost") && !isInternal(c)
            && c.getDirectDependenciesFromSelf().stream().anyMatch(d -> isInternal(d.getTargetClass())));
  }

  private static DescribedPredicate<JavaClass> internalOtherThan(String internal) {
    return DescribedPredicate.describe("an internal class of another module than " + internal,
        c -> isInternal(c) && !c.getPackageName().startsWith(internal));
  }
}
