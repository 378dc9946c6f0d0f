// Build of the JVM side of tfrecord-io: pure Java, no Scala.
//
//   bin/sbt core/test                   JUnit tests of the library (jvm/src/test/java)
//   bin/sbt minihdfs/exportClasspath    writes .tools/minihdfs.classpath (one ':'-separated line)
//   bin/sbt miniyarn/exportClasspath    writes .tools/miniyarn.classpath (the test YARN's)
//   bin/sbt postgresJdbc/exportClasspath writes .tools/postgres-jdbc.classpath (the PostgreSQL
//                                       JDBC driver that the tests give Spark in spark.jars)
//   bin/sbt hadoopAws/exportClasspath   writes .tools/hadoop-aws.classpath (Hadoop's S3A
//                                       connector, on the tests' Spark classpath)
//   bin/sbt hadoopAzure/exportClasspath writes .tools/hadoop-azure.classpath (Hadoop's ABFS
//                                       connector, on the tests' Spark classpath)
//   bin/sbt gcsConnector/exportClasspath writes .tools/gcs-connector.classpath (Google's Cloud
//                                       Storage connector, on the tests' Spark classpath)
//   bin/sbt core/publishM2              the Maven artifact org.tfrecordio:tfrecord-io:VERSION (jar,
//                                       sources and javadoc jars, POM) into ~/.m2/repository, or
//                                       SBT_OPTS=-Dmaven.repo.local=DIR; core/publishLocal: ~/.ivy2
//
// core compiles and tests against exactly the jars that the installed pyspark ships (Spark,
// Hadoop client 3.5.0, slf4j, log4j 2), as setup.py does for the jar that Python ships
// (tfrecord_io/jars/tfrecord-io.jar): the JUnit tests see the classes users run. Those jars are
// taken from .venv (made by `make setup`) or from $TFRECORD_IO_SPARK_JARS. Spark is not taken
// from Maven Central because Central has no Spark 4.3.0 (the pyspark version in use).
// minihdfs (the test HDFS, a MiniDFSCluster) comes from Maven Central, the only repository used
// (project/repositories, passed by bin/sbt).

// The Hadoop that pyspark 4.3.0 bundles; stated only here (build_support/versions.py reads it).
val hadoopVersion = "3.5.0"

// What the published POM names as `provided` (the jar's only dependencies; nothing at run time).
// The compile classpath is pyspark's jars (Spark 4.3.0), but Central has no Spark 4.3.0: the POM
// names the newest Spark release on Central, 4.2.0, whose spark-sql API the jar uses the same
// way (Java API only). The Scala suffix does not bind users: `provided` dependencies are not
// transitive, and the jar itself has no Scala suffix (it is plain Java, one jar for Spark 3.5 /
// Scala 2.12 and Spark 4.x / Scala 2.13).
val pomSparkVersion = "4.2.0"
val pomProvided = Seq(
  ("org.apache.spark", "spark-sql_2.13", pomSparkVersion),
  ("org.apache.hadoop", "hadoop-client-api", hadoopVersion)
)

ThisBuild / organization := "org.tfrecordio"
// The package's version is stated once, in tfrecord_io/__init__.py.
ThisBuild / version := {
  val init = IO.read(file("tfrecord_io") / "__init__.py")
  """(?m)^__version__\s*=\s*"([^"]+)"""".r.findFirstMatchIn(init).map(_.group(1))
    .getOrElse(sys.error("tfrecord_io/__init__.py states no __version__"))
}
// No Scala sources, but sbt's analysis of compiled Java classes loads them with this Scala's
// library: it must be the Scala of pyspark 4.3.0's jars, since a class extending one of Spark's
// Scala classes (PathOutputCommitProtocol) names 2.13-only types.
ThisBuild / scalaVersion := "2.13.18"

// Options for every javac run that compiles (not javadoc, which rejects -Xlint).
// (-Xlint:-path: pyspark jars name absent jars in their manifests' Class-Path.)
val javacCompileOptions =
  Seq("--release", "11", "-encoding", "UTF-8", "-Xlint", "-Xlint:-path", "-proc:none")

lazy val javaOnly = Seq(
  crossPaths := false,
  autoScalaLibrary := false,
  sourcesInBase := false, // jvm/ itself holds no sources (jvm/minihdfs is its own project)
  Compile / unmanagedSourceDirectories := Seq((Compile / javaSource).value),
  Test / unmanagedSourceDirectories := Seq((Test / javaSource).value),
  javacOptions := Seq("-encoding", "UTF-8"),
  Compile / compile / javacOptions := javacCompileOptions,
  Test / compile / javacOptions := javacCompileOptions,
  Compile / doc / javacOptions := Seq("-encoding", "UTF-8", "--release", "11", "-Xdoclint:none"),
  compileOrder := CompileOrder.JavaThenScala
)

// What Spark itself passes to its JVMs on Java 17 (JavaModuleOptions), so that Spark, Hadoop and
// friends may reflect into the JDK.
val jdkOpens = Seq(
  "-XX:+IgnoreUnrecognizedVMOptions",
  "-Djdk.reflect.useDirectMethodHandle=false",
  "-Dio.netty.tryReflectionSetAccessible=true"
) ++ Seq(
  "java.base/java.lang",
  "java.base/java.lang.invoke",
  "java.base/java.lang.reflect",
  "java.base/java.io",
  "java.base/java.net",
  "java.base/java.nio",
  "java.base/java.util",
  "java.base/java.util.concurrent",
  "java.base/java.util.concurrent.atomic",
  "java.base/jdk.internal.ref",
  "java.base/sun.nio.ch",
  "java.base/sun.nio.cs",
  "java.base/sun.security.action",
  "java.base/sun.util.calendar"
).flatMap(p => Seq("--add-opens", s"$p=ALL-UNNAMED"))

lazy val root = (project in file("."))
  .aggregate(core, minihdfs, miniyarn, postgresJdbc, hadoopAws, hadoopAzure, gcsConnector)
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io-root",
    publish / skip := true,
    // The root has no sources of its own: keep sbt from picking up ./src if one ever appears.
    Compile / unmanagedSourceDirectories := Nil,
    Test / unmanagedSourceDirectories := Nil
  )

// The directory of jars that pyspark ships: $TFRECORD_IO_SPARK_JARS, else the pyspark in .venv.
val sparkJarsDir = taskKey[File]("pyspark's jars/ directory, which core compiles against")

def findSparkJars(root: File): Either[String, File] = {
  def ok(d: File) = (d * "hadoop-client-api-*.jar").get.nonEmpty
  sys.env.get("TFRECORD_IO_SPARK_JARS").filter(_.nonEmpty) match {
    case Some(path) =>
      val d = file(path)
      if (ok(d)) Right(d) else Left(s"TFRECORD_IO_SPARK_JARS=$path holds no hadoop-client-api-*.jar")
    case None =>
      val found = (root / ".venv" / "lib" * "python*" / "site-packages" / "pyspark" / "jars").get
        .filter(ok).sortBy(_.getPath)
      found.lastOption.toRight(
        s"no pyspark jars under ${root / ".venv"}: run `make setup` first (it installs pyspark " +
          "into .venv), or point TFRECORD_IO_SPARK_JARS at a directory of Spark's jars"
      )
  }
}

lazy val core = (project in file("jvm"))
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io",
    description := "TFRecord as a Hadoop and Spark file format: InputFormat/OutputFormat, DataFrame codec",
    licenses := Seq("Apache-2.0" -> url("https://www.apache.org/licenses/LICENSE-2.0.txt")),
    // The POM: no runtime dependency; Spark and Hadoop `provided` (see pomProvided); test-only
    // dependencies (JUnit) left out, as they say nothing to users.
    pomPostProcess := { (node: scala.xml.Node) =>
      import scala.xml._
      import scala.xml.transform._
      val provided = pomProvided.map { case (g, a, v) =>
        <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version><scope>provided</scope></dependency>
      }
      val rule = new RewriteRule {
        override def transform(n: Node): Seq[Node] = n match {
          case e: Elem if e.label == "project" =>
            val kept = e.child.filterNot(_.label == "dependencies")
            e.copy(child = kept :+ <dependencies>{provided}</dependencies>)
          case other => other
        }
      }
      new RuleTransformer(rule).transform(node).head
    },
    sparkJarsDir := findSparkJars((ThisBuild / baseDirectory).value)
      .fold(msg => throw new sbt.internal.util.MessageOnlyException(msg), identity),
    // Provided in effect: on the compile and test classpaths, never in anything published.
    Compile / unmanagedJars ++= (sparkJarsDir.value * "*.jar").classpath,
    libraryDependencies ++= Seq(
      "junit" % "junit" % "4.13.2" % Test,
      "com.github.sbt" % "junit-interface" % "0.13.3" % Test,
      // ArchitectureTest: the package order of docs/architecture.md, checked on the classes.
      "com.tngtech.archunit" % "archunit" % "1.5.0" % Test
    ),
    Test / fork := true,
    Test / javaOptions ++= Seq(
      "-Xmx2g",
      "-Xss4m",
      "-XX:+UseParallelGC",
      "-Djava.net.preferIPv4Stack=true",
      // log4j 2 (pyspark's slf4j provider) at WARN on System.out, which junit-interface's -q
      // buffers: the log of a test shows only when that test fails.
      "-Dlog4j2.configurationFile=" +
        ((ThisBuild / baseDirectory).value / "project" / "log4j2-test.properties").toURI,
      "-Dspark.ui.enabled=false",
      "-Dspark.ui.showConsoleProgress=false"
    ) ++ jdkOpens
      // The mutation fuzz test's size and seed (MutationFuzzTest), passed on from sbt's JVM:
      //   SBT_OPTS="-Dtfrecord.fuzz.variants=100000" bin/sbt "core/testOnly *MutationFuzzTest"
      ++ Seq("tfrecord.fuzz.variants", "tfrecord.fuzz.seed")
        .flatMap(k => sys.props.get(k).map(v => s"-D$k=$v")),
    Test / parallelExecution := false,
    // -a: stack traces of assertion failures; -q: hide stdout of passing tests;
    // -v would log every test's start and end.
    Test / testOptions += Tests.Argument(TestFrameworks.JUnit, "-a", "-q"),
    Test / logBuffered := false
  )

val exportClasspath = taskKey[File]("Write the runtime classpath to .tools/<project>.classpath")

// exportClasspath writing `classpath` (the project's full runtime classpath, or only its
// dependencies' jars) to .tools/NAME as one ':'-separated line without a trailing newline.
def exportClasspathTo(name: String, classpath: TaskKey[Classpath]) = exportClasspath := {
  val cp = (Runtime / classpath).value.files.map(_.getAbsolutePath)
  val out = (ThisBuild / baseDirectory).value / ".tools" / name
  IO.write(out, cp.mkString(java.io.File.pathSeparator))
  streams.value.log.info(s"wrote ${cp.size} classpath entries to $out")
  out
}

lazy val minihdfs = (project in file("jvm/minihdfs"))
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io-minihdfs",
    publish / skip := true,
    libraryDependencies ++= Seq(
      "org.apache.hadoop" % "hadoop-minicluster" % hadoopVersion,
      // MiniDFSCluster lives in hadoop-hdfs's test jar and needs hadoop-common's test jar;
      // hadoop-minicluster already brings both, named here so that they are never lost.
      "org.apache.hadoop" % "hadoop-hdfs" % hadoopVersion classifier "tests",
      "org.apache.hadoop" % "hadoop-common" % hadoopVersion classifier "tests"
    ),
    Compile / mainClass := Some("org.tfrecordio.minihdfs.MiniHdfs"),
    run / fork := true,
    run / javaOptions ++= Seq("-Xmx1g", "-Djava.net.preferIPv4Stack=true") ++ jdkOpens,
    run / connectInput := true,
    exportClasspathTo("minihdfs.classpath", fullClasspath)
  )

// The test YARN: a MiniYARNCluster (ResourceManager, NodeManagers) with its HDFS in one JVM
// (org.tfrecordio.miniyarn.MiniYarn), classpath written to .tools/miniyarn.classpath.
lazy val miniyarn = (project in file("jvm/miniyarn"))
  .dependsOn(minihdfs)
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io-miniyarn",
    publish / skip := true,
    libraryDependencies ++= Seq(
      // MiniYARNCluster lives in hadoop-yarn-server-tests's test jar, which needs JUnit at run
      // time (Hadoop's GenericTestUtils asserts with JUnit 5; some helpers still use JUnit 4).
      "org.apache.hadoop" % "hadoop-yarn-server-tests" % hadoopVersion classifier "tests",
      "org.junit.jupiter" % "junit-jupiter-api" % "5.13.3",
      "junit" % "junit" % "4.13.2"
    ),
    Compile / mainClass := Some("org.tfrecordio.miniyarn.MiniYarn"),
    exportClasspathTo("miniyarn.classpath", fullClasspath)
  )

// The PostgreSQL JDBC driver for the tests' Spark application (spark.jars), which reads the test
// database (tfrecord_io.testing.postgres) with Spark's JDBC source. No sources: only the
// driver's jars, written to .tools/postgres-jdbc.classpath.
lazy val postgresJdbc = (project in file("jvm/postgres-jdbc"))
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io-postgres-jdbc",
    publish / skip := true,
    libraryDependencies += "org.postgresql" % "postgresql" % "42.7.14",
    exportClasspathTo("postgres-jdbc.classpath", managedClasspath)
  )

// Hadoop's S3A connector (s3a://, and s3:// as tfrecord_io.spark.s3a_conf maps it) for the
// tests' Spark applications: hadoop-aws of the Hadoop that pyspark bundles, with the AWS SDK
// bundle it depends on (hadoop-common is `provided` there: pyspark's own). No sources: the jars,
// written to .tools/hadoop-aws.classpath, which the tests put on the driver's and executors'
// extraClassPath (no copy of the SDK's 650 MB to each executor, as spark.jars would make).
lazy val hadoopAws = (project in file("jvm/hadoop-aws"))
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io-hadoop-aws",
    publish / skip := true,
    libraryDependencies += "org.apache.hadoop" % "hadoop-aws" % hadoopVersion,
    exportClasspathTo("hadoop-aws.classpath", managedClasspath)
  )

// Hadoop's ABFS connector (abfs://, abfss://) for the tests' Spark applications: hadoop-azure of
// the Hadoop that pyspark bundles, with what it needs beyond pyspark's Hadoop client (hadoop-
// common and Hadoop's shaded third-party libraries are pyspark's own), written to
// .tools/hadoop-azure.classpath for the driver's and executors' extraClassPath. Its driver
// reaches flat-namespace accounts through the Blob endpoint, which Azurite serves.
lazy val hadoopAzure = (project in file("jvm/hadoop-azure"))
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io-hadoop-azure",
    publish / skip := true,
    libraryDependencies += ("org.apache.hadoop" % "hadoop-azure" % hadoopVersion)
      .exclude("org.apache.hadoop", "hadoop-common")
      .excludeAll(ExclusionRule(organization = "org.apache.hadoop.thirdparty")),
    exportClasspathTo("hadoop-azure.classpath", managedClasspath)
  )

// Google's Cloud Storage connector for Hadoop (gs://) for the tests' Spark applications: its
// shaded jar alone (Google's libraries relocated inside it, so nothing clashes with Spark's
// Guava or protobuf), written to .tools/gcs-connector.classpath, which the tests put on the
// driver's and executors' extraClassPath. Hadoop 3.5's own hadoop-gcp cannot reach an emulator
// (no endpoint setting, and no unauthenticated access: a NullPointerException at its start).
lazy val gcsConnector = (project in file("jvm/gcs-connector"))
  .settings(javaOnly)
  .settings(
    name := "tfrecord-io-gcs-connector",
    publish / skip := true,
    libraryDependencies +=
      ("com.google.cloud.bigdataoss" % "gcs-connector" % "3.0.4" classifier "shaded").intransitive(),
    exportClasspathTo("gcs-connector.classpath", managedClasspath)
  )
