package org.tfrecordio.minihdfs;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The life of a test cluster in a JVM of its own, driven by the process that started it over
 * stdin: what {@link MiniHdfs} and {@code MiniYarn} share, and what the Python side's {@code
 * tfrecord_io.testing.childjvm} speaks to.
 *
 * <ul>
 *   <li>Once the cluster is up, one line on stdout: {@code NAME READY {json}}.
 *   <li>Then one command per line on stdin, each answered by one line, {@code OK ...} or {@code
 *       ERROR ...}: {@code ping} (answered {@code OK pong}), {@code shutdown} (stops the cluster
 *       and exits), and the cluster's own ({@link #answer}).
 *   <li>End of input (the parent died or closed the pipe) and SIGTERM stop the cluster too, so
 *       no orphan JVM is left behind.
 * </ul>
 *
 * <p>Hadoop's own log goes to {@code BASE/NAME.log} ({@link #configureLogging}), never to stdout,
 * which carries only the ready line and the answers.
 */
public abstract class ServiceMain {
  /** Stdout: the ready line and the answers to commands, nothing else. */
  protected static final PrintStream OUT =
      new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true,
          StandardCharsets.UTF_8);

  /** Log4j settings of every test cluster: its log file, and the chattiest loggers quiet. */
  private static final List<String> LOGGING =
      Arrays.asList(
          "log4j.rootLogger=INFO, file",
          "log4j.appender.file=org.apache.log4j.RollingFileAppender",
          "log4j.appender.file.MaxFileSize=20MB",
          "log4j.appender.file.MaxBackupIndex=1",
          "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
          "log4j.appender.file.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n",
          "log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode.clienttrace=WARN",
          "log4j.logger.org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit=WARN",
          "log4j.logger.org.apache.hadoop.hdfs.StateChange=WARN",
          "log4j.logger.BlockStateChange=WARN",
          "log4j.logger.org.apache.hadoop.metrics2=WARN",
          "log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR");

  /** The cluster's name in its ready line (upper case) and in messages on stderr. */
  private final String name;

  private final AtomicBoolean stopped = new AtomicBoolean(false);

  protected ServiceMain(String name) {
    this.name = name;
  }

  /** Starts the cluster; returns the JSON object of its ready line. */
  protected abstract String start() throws Exception;

  /**
   * Runs one of the cluster's own commands ({@code words[0]}, its arguments after it) and returns
   * the text of its {@code OK} answer.
   *
   * @throws IllegalArgumentException an unknown command or wrong arguments
   * @throws Exception the command failed: its answer is {@code ERROR}, with the exception
   */
  protected abstract String answer(String[] words) throws Exception;

  /** Stops the cluster's servers (called once), each error said on stderr, not thrown. */
  protected abstract void shutdown();

  /** Says on stderr what may explain a failed start (nothing by default). */
  protected void explainFailedStart() {}

  /** Stops the cluster, once; later calls do nothing. */
  public final void stop() {
    if (stopped.compareAndSet(false, true)) {
      shutdown();
    }
  }

  /** An error on stderr, prefixed by the cluster's name. */
  protected final void warn(String message) {
    System.err.println(name + ": " + message);
  }

  /**
   * Runs {@code service} until {@code shutdown}, end of input or SIGTERM, then exits: status 0, or
   * 1 when the cluster failed to start. Never returns.
   */
  protected static void run(ServiceMain service) {
    Runtime.getRuntime().addShutdownHook(new Thread(service::stop, service.name + "-shutdown"));
    String ready;
    try {
      ready = service.start();
    } catch (Throwable t) {
      service.warn("failed to start: " + t);
      t.printStackTrace();
      service.explainFailedStart();
      service.stop();
      System.exit(1);
      return;
    }
    OUT.println(service.name.toUpperCase(Locale.ROOT) + " READY " + ready);
    try {
      service.commandLoop();
    } catch (IOException e) {
      service.warn("reading stdin failed: " + e);
    }
    service.stop();
    System.exit(0);
  }

  private void commandLoop() throws IOException {
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      line = line.trim();
      if (line.isEmpty()) {
        continue;
      }
      String[] words = line.split("\\s+");
      try {
        switch (words[0]) {
          case "ping":
            OUT.println("OK pong");
            break;
          case "shutdown":
            stop();
            OUT.println("OK shutdown");
            return;
          default:
            OUT.println("OK " + answer(words));
        }
      } catch (Exception e) {
        OUT.println("ERROR " + line + ": " + String.valueOf(e).replace('\n', ' '));
      }
    }
  }

  /** An exception for a command this cluster does not know. */
  protected static IllegalArgumentException unknown(String[] words) {
    return new IllegalArgumentException("unknown command: " + words[0]);
  }

  /**
   * Sends Hadoop's log4j output to {@code BASE/NAME.log}: {@link #LOGGING}, then {@code extra}
   * lines. Must run before any Hadoop class (and so log4j) is loaded.
   */
  protected static void configureLogging(Path baseDir, String name, String... extra)
      throws IOException {
    List<String> lines = new ArrayList<>(LOGGING);
    lines.add(
        "log4j.appender.file.File="
            + baseDir.resolve(name + ".log").toString().replace("\\", "/"));
    lines.addAll(Arrays.asList(extra));
    lines.add("");
    Path props = baseDir.resolve("log4j.properties");
    Files.write(props, String.join("\n", lines).getBytes(StandardCharsets.UTF_8));
    System.setProperty("log4j.configuration", props.toUri().toString());
    System.setProperty("hadoop.log.dir", baseDir.toString());
  }

  /** Command-line options every test cluster takes: {@code --base-dir}, {@code --conf-dir}. */
  protected static class Options {
    public Path baseDir;
    public Path confDir;

    /**
     * Takes the value of one option other than these two; false when it is not one of the
     * cluster's.
     */
    protected boolean take(String option, String value) {
      return false;
    }

    /** Checks the values once all are taken. */
    protected void check() {}

    /**
     * Reads {@code args} ({@code --option VALUE} pairs) into these options.
     *
     * @throws IllegalArgumentException help asked for, an unknown option, a missing value, or
     *     values {@link #check} refuses
     */
    public final void parse(String[] args) {
      for (int i = 0; i < args.length; i++) {
        String option = args[i];
        if (option.equals("-h") || option.equals("--help")) {
          throw new IllegalArgumentException("help");
        }
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException("missing value for " + option);
        }
        String value = args[++i];
        if (option.equals("--base-dir")) {
          baseDir = Paths.get(value).toAbsolutePath();
        } else if (option.equals("--conf-dir")) {
          confDir = Paths.get(value).toAbsolutePath();
        } else if (!take(option, value)) {
          throw new IllegalArgumentException("unknown option " + option);
        }
      }
      if (baseDir == null) {
        throw new IllegalArgumentException("--base-dir is required");
      }
      if (confDir == null) {
        confDir = baseDir.resolve("conf");
      }
      check();
    }

    /**
     * {@link #parse}s {@code args}, or says on stderr what is wrong and how to call {@code name}
     * ({@code usage}), and exits with status 2. Then makes the base and configuration
     * directories.
     */
    public final void parseOrExit(String name, String usage, String[] args) throws IOException {
      try {
        parse(args);
      } catch (IllegalArgumentException e) {
        System.err.println(name + ": " + e.getMessage());
        System.err.println("usage: " + usage);
        System.exit(2);
      }
      Files.createDirectories(baseDir);
      Files.createDirectories(confDir);
    }
  }

  /** {@code s} as a JSON string. */
  protected static String q(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : String.valueOf(s).toCharArray()) {
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
