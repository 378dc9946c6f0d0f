package org.tfrecordio;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.Assert.assertTrue;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.lang.EvaluationResult;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The package order of docs/architecture.md's JVM table, checked on the jar's classes: codec
 * and example (the JDK only), then hadoop, mapreduce and mapred, spark, spark.source,
 * spark.feed and spark.cluster, tools; each package uses only those before it, siblings not
 * each other, and no classes form a cycle. Each rule is also shown failing on a deliberate violation (the
 * {@code org.tfrecordio.archfixture} test classes).
 */
public class ArchitectureTest {
  private static final String ROOT = "org.tfrecordio";
  private static final String FIXTURE = "org.tfrecordio.archfixture";

  private static JavaClasses main;
  private static JavaClasses fixture;

  @BeforeClass
  public static void importClasses() {
    main = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
        .importPackages(ROOT);
    fixture = new ClassFileImporter().importPackages(FIXTURE);
  }

  /** The layers of the packages under {@code root}, lowest first. */
  static ArchRule packageOrder(String root) {
    return layeredArchitecture().consideringOnlyDependenciesInLayers().withOptionalLayers(true)
        .layer("codec").definedBy(root + ".codec..")
        .layer("example").definedBy(root + ".example..")
        .layer("hadoop").definedBy(root + ".hadoop..")
        .layer("mapreduce").definedBy(root + ".mapreduce..")
        .layer("mapred").definedBy(root + ".mapred..")
        .layer("spark").definedBy(root + ".spark")
        .layer("spark.source").definedBy(root + ".spark.source..")
        .layer("spark.feed").definedBy(root + ".spark.feed..")
        .layer("spark.cluster").definedBy(root + ".spark.cluster..")
        .layer("tools").definedBy(root + ".tools..")
        .whereLayer("codec").mayOnlyBeAccessedByLayers("hadoop", "mapreduce", "mapred", "spark",
            "spark.source", "spark.feed", "spark.cluster", "tools")
        .whereLayer("example").mayOnlyBeAccessedByLayers("hadoop", "mapreduce", "mapred",
            "spark", "spark.source", "spark.feed", "spark.cluster", "tools")
        .whereLayer("hadoop").mayOnlyBeAccessedByLayers("mapreduce", "mapred", "spark",
            "spark.source", "spark.feed", "spark.cluster", "tools")
        .whereLayer("mapreduce").mayOnlyBeAccessedByLayers("spark", "spark.source",
            "spark.feed", "spark.cluster", "tools")
        .whereLayer("mapred").mayOnlyBeAccessedByLayers("spark", "spark.source", "spark.feed",
            "spark.cluster", "tools")
        .whereLayer("spark").mayOnlyBeAccessedByLayers("spark.source", "spark.feed",
            "spark.cluster", "tools")
        .whereLayer("spark.source").mayOnlyBeAccessedByLayers("tools")
        .whereLayer("spark.feed").mayOnlyBeAccessedByLayers("tools")
        .whereLayer("spark.cluster").mayOnlyBeAccessedByLayers("tools")
        .whereLayer("tools").mayNotBeAccessedByAnyLayer();
  }

  /** codec and example are plain Java (and slf4j, for logging): no Hadoop, no Spark. */
  static ArchRule jdkOnly(String root) {
    return classes().that().resideInAnyPackage(root + ".codec..", root + ".example..")
        .should().onlyDependOnClassesThat().resideInAnyPackage("java..", "org.slf4j..",
            root + ".codec..", root + ".example..")
        .as("codec and example depend on the JDK (and slf4j) only");
  }

  /** No cycle between packages. */
  static ArchRule packagesAcyclic(String root) {
    return slices().matching(root + ".(**)").should().beFreeOfCycles();
  }

  /** No cycle between top-level classes (a nested class counts as its outer class). */
  static ArchRule classesAcyclic(String root) {
    return slices().assignedFrom(new SliceAssignment() {
      @Override
      public SliceIdentifier getIdentifierOf(JavaClass c) {
        if (!c.getPackageName().startsWith(root)) {
          return SliceIdentifier.ignore();
        }
        String name = c.getName();
        int nested = name.indexOf('$');
        return SliceIdentifier.of(nested < 0 ? name : name.substring(0, nested));
      }

      @Override
      public String getDescription() {
        return "top-level classes of " + root;
      }
    }).should().beFreeOfCycles();
  }

  @Test
  public void packagesAreLayeredAsTheArchitectureDocumentSays() {
    packageOrder(ROOT).check(main);
  }

  @Test
  public void codecAndExampleDependOnTheJdkOnly() {
    jdkOnly(ROOT).check(main);
  }

  @Test
  public void noPackagesFormACycle() {
    packagesAcyclic(ROOT).check(main);
  }

  @Test
  public void noClassesFormACycle() {
    classesAcyclic(ROOT).check(main);
  }

  @Test
  public void anUpwardDependencyAndACycleAreCaught() {
    String upward = "org.tfrecordio.archfixture.codec.Low";
    for (ArchRule rule : new ArchRule[] {packageOrder(FIXTURE), jdkOnly(FIXTURE),
        packagesAcyclic(FIXTURE), classesAcyclic(FIXTURE)}) {
      EvaluationResult result = rule.evaluate(fixture);
      assertTrue(rule.getDescription(), result.hasViolation());
      String report = String.join("\n", result.getFailureReport().getDetails());
      assertTrue(report, report.contains(upward) && report.contains("High.name()"));
    }
  }
}
