package org.tfrecordio.minihdfs;

import java.io.IOException;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A whole HDFS in one JVM, for tests and for developers: a MiniDFSCluster with one NameNode (RPC and
 * HTTP with WebHDFS) and N DataNodes, every server bound to one address: 127.0.0.1 unless {@code
 * --host} names another (such as a bridge that network namespaces reach).
 *
 * <p>Usage:
 *
 * <pre>
 *   java -cp CLASSPATH org.tfrecordio.minihdfs.MiniHdfs --base-dir DIR [--conf-dir DIR]
 *       [--datanodes N] [--replication R] [--rpc-port P] [--http-port P] [--block-size BYTES]
 *       [--host ADDRESS]
 * </pre>
 *
 * <p>When the cluster is up, one line is printed on stdout:
 *
 * <pre>
 *   MINIHDFS READY {"rpc": "hdfs://127.0.0.1:PORT", "http": "http://127.0.0.1:PORT", ...}
 * </pre>
 *
 * <p>Then it is driven over stdin as every test cluster is ({@link ServiceMain}): besides {@code
 * ping} and {@code shutdown}, its commands are
 *
 * <ul>
 *   <li>{@code stop-datanode I}: stop DataNode I (0-based, numbering as at startup; the NameNode is
 *       not told, as when a machine dies).
 *   <li>{@code restart-datanode I}: start DataNode I again, on the same ports and storage, and wait
 *       until it has registered.
 * </ul>
 *
 * <p>Hadoop's own log goes to {@code BASE/minihdfs.log}.
 */
public final class MiniHdfs extends ServiceMain {
  /** The address servers bind by default. */
  public static final String LOOPBACK = "127.0.0.1";

  private final Options opts;
  /** The cluster; Hadoop classes initialise only after {@link #configureLogging} ran. */
  private org.apache.hadoop.hdfs.MiniDFSCluster cluster;
  /** xfer port of each DataNode, by the index it had at startup (stable across stop/restart). */
  private final List<Integer> dnXferPorts = new ArrayList<>();
  /** Properties of stopped DataNodes, by startup index, needed to restart them. */
  private final Map<Integer, org.apache.hadoop.hdfs.MiniDFSCluster.DataNodeProperties> stoppedDns =
      new HashMap<>();

  static final class Options extends ServiceMain.Options {
    int dataNodes = 2;
    int replication = -1;
    int rpcPort = 0;
    int httpPort = 0;
    long blockSize = 0;
    String host = LOOPBACK;

    @Override
    protected boolean take(String option, String value) {
      switch (option) {
        case "--datanodes":
          dataNodes = Integer.parseInt(value);
          return true;
        case "--replication":
          replication = Integer.parseInt(value);
          return true;
        case "--rpc-port":
          rpcPort = Integer.parseInt(value);
          return true;
        case "--http-port":
          httpPort = Integer.parseInt(value);
          return true;
        case "--block-size":
          blockSize = Long.parseLong(value);
          return true;
        case "--host":
          host = value;
          return true;
        default:
          return false;
      }
    }

    @Override
    protected void check() {
      if (dataNodes < 1) {
        throw new IllegalArgumentException("--datanodes must be at least 1");
      }
      if (replication < 0) {
        replication = Math.min(2, dataNodes);
      }
      if (replication < 1 || replication > dataNodes) {
        throw new IllegalArgumentException("--replication must be between 1 and --datanodes");
      }
    }
  }

  private MiniHdfs(Options opts) {
    super("minihdfs");
    this.opts = opts;
  }

  public static void main(String[] args) throws Exception {
    Options opts = new Options();
    opts.parseOrExit(
        "minihdfs",
        "MiniHdfs --base-dir DIR [--conf-dir DIR] [--datanodes N] [--replication R]"
            + " [--rpc-port P] [--http-port P] [--block-size BYTES] [--host ADDRESS]",
        args);
    configureLogging(
        opts.baseDir,
        "minihdfs",
        // The chattiest per-block loggers of a DataNode.
        "log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode=WARN",
        "log4j.logger.org.apache.hadoop.hdfs.server.datanode.fsdataset=WARN");
    run(new MiniHdfs(opts));
  }

  @Override
  protected void explainFailedStart() {
    reportLowDisk(opts.baseDir);
  }

  /**
   * Says so on stderr when the disk holding {@code dir} has less free space than a NameNode
   * needs ({@code dfs.namenode.resource.du.reserved}, 100 MB): it then stays in safe mode, and
   * MiniDFSCluster only reports a timeout.
   */
  private static void reportLowDisk(Path dir) {
    long reserved = 100L * 1024 * 1024;
    long free = dir.toFile().getUsableSpace();
    if (free < reserved) {
      System.err.printf(
          "minihdfs: only %d MB free on the disk of %s; a NameNode stays in safe mode below"
              + " %d MB (dfs.namenode.resource.du.reserved): free some space and start again%n",
          free >> 20, dir, reserved >> 20);
    }
  }

  @Override
  protected String start() throws IOException {
    long t0 = System.nanoTime();
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.hdfs.HdfsConfiguration();
    conf.set("hadoop.tmp.dir", opts.baseDir.resolve("tmp").toString());
    conf.setInt("dfs.replication", opts.replication);
    if (opts.blockSize > 0) {
      conf.setLong("dfs.blocksize", opts.blockSize);
      conf.setLong("dfs.namenode.fs-limits.min-block-size", Math.min(opts.blockSize, 1024 * 1024));
    }
    // Permissions on, so permission errors can be tested; the superuser is whoever runs this JVM
    // (the NameNode's own user), as on a real cluster.
    conf.setBoolean("dfs.permissions.enabled", true);
    // A busy test machine delays the DataNodes' reports of the blocks they received: let a file
    // be closed, and its next block be added, while its last block awaits them (HDFS-8999), as
    // busy clusters are configured; hdfs-native retries both only a few times.
    conf.setInt("dfs.namenode.file.close.num-committed-allowed", 1);
    conf.setBoolean("dfs.webhdfs.enabled", true);
    conf.set("hadoop.security.authentication", "simple");
    bindTo(conf, opts.host);

    org.apache.hadoop.hdfs.MiniDFSCluster.Builder b =
        new org.apache.hadoop.hdfs.MiniDFSCluster.Builder(conf, opts.baseDir.resolve("data").toFile())
            .numDataNodes(opts.dataNodes)
            .nameNodePort(opts.rpcPort)
            .nameNodeHttpPort(opts.httpPort)
            .format(true)
            .checkExitOnShutdown(false)
            .checkDataNodeAddrConfig(true)
            .checkDataNodeHostConfig(true)
            .waitSafeMode(true);
    cluster = b.build();
    cluster.waitActive();
    for (org.apache.hadoop.hdfs.server.datanode.DataNode dn : cluster.getDataNodes()) {
      dnXferPorts.add(dn.getXferPort());
    }
    writeClientConf();
    return readyJson((System.nanoTime() - t0) / 1e9);
  }

  /**
   * Sets a MiniDFSCluster's configuration so that every server binds {@code host} and is known by
   * it (WebHDFS redirects and block locations name {@code host}, never the machine's host name),
   * with quick heartbeats (a dead DataNode noticed in ~12 s), no safe mode wait, and bounded
   * client retries. Used by this class and by other test clusters that hold an HDFS.
   */
  public static void bindTo(org.apache.hadoop.conf.Configuration conf, String host) {
    if (!host.equals(LOOPBACK)) {
      // MiniDFSCluster names the NameNode "localhost" to its DataNodes: make Hadoop resolve that
      // name to the address the NameNode binds.
      org.apache.hadoop.net.NetUtils.addStaticResolution("localhost", host);
    }
    conf.set("dfs.namenode.rpc-bind-host", host);
    conf.set("dfs.namenode.http-bind-host", host);
    conf.set("dfs.datanode.address", host + ":0");
    conf.set("dfs.datanode.http.address", host + ":0");
    conf.set("dfs.datanode.ipc.address", host + ":0");
    conf.set("dfs.datanode.hostname", host);
    conf.setBoolean("dfs.datanode.use.datanode.hostname", false);
    conf.setBoolean("dfs.client.use.datanode.hostname", false);
    conf.setBoolean("dfs.namenode.datanode.registration.ip-hostname-check", false);
    conf.setLong("dfs.heartbeat.interval", 1);
    conf.setInt("dfs.namenode.heartbeat.recheck-interval", 1000);
    conf.setInt("dfs.namenode.safemode.extension", 0);
    // The NameNode's scrubber of deleted blocks wakes every unlock interval even when it has
    // nothing to do (10 ms by default): on a small test machine that is a tenth of a core.
    conf.setLong("dfs.namenode.block.deletion.unlock.interval.ms", 500);
    conf.setInt("ipc.client.connect.max.retries", 3);
    conf.setInt("ipc.client.connect.max.retries.on.timeouts", 3);
  }

  private String rpcUrl() {
    return "hdfs://" + opts.host + ":" + cluster.getNameNodePort();
  }

  private String httpAddr() {
    InetSocketAddress a = cluster.getNameNode().getHttpAddress();
    return opts.host + ":" + a.getPort();
  }

  private String readyJson(double startSeconds) {
    StringBuilder sb = new StringBuilder();
    sb.append('{');
    sb.append("\"rpc\": ").append(q(rpcUrl()));
    sb.append(", \"http\": ").append(q("http://" + httpAddr()));
    sb.append(", \"webhdfs\": ").append(q("webhdfs://" + httpAddr()));
    sb.append(", \"conf_dir\": ").append(q(opts.confDir.toString()));
    sb.append(", \"base_dir\": ").append(q(opts.baseDir.toString()));
    sb.append(", \"log\": ").append(q(opts.baseDir.resolve("minihdfs.log").toString()));
    sb.append(", \"superuser\": ").append(q(System.getProperty("user.name")));
    sb.append(", \"replication\": ").append(opts.replication);
    sb.append(", \"start_seconds\": ").append(String.format(Locale.ROOT, "%.3f", startSeconds));
    sb.append(", \"datanodes\": [");
    List<org.apache.hadoop.hdfs.server.datanode.DataNode> dns = cluster.getDataNodes();
    for (int i = 0; i < dns.size(); i++) {
      org.apache.hadoop.hdfs.server.datanode.DataNode dn = dns.get(i);
      if (i > 0) {
        sb.append(", ");
      }
      sb.append("{\"index\": ").append(i);
      sb.append(", \"xfer\": ").append(q(opts.host + ":" + dn.getXferPort()));
      sb.append(", \"http\": ").append(q(opts.host + ":" + dn.getInfoPort()));
      sb.append(", \"ipc\": ").append(q(opts.host + ":" + dn.getIpcPort()));
      sb.append('}');
    }
    sb.append("]}");
    return sb.toString();
  }

  /** Writes core-site.xml and hdfs-site.xml for HADOOP_CONF_DIR clients. */
  private void writeClientConf() throws IOException {
    Map<String, String> core = new LinkedHashMap<>();
    core.put("fs.defaultFS", rpcUrl());
    core.put("hadoop.security.authentication", "simple");
    core.put("ipc.client.connect.max.retries", "3");
    core.put("ipc.client.connect.max.retries.on.timeouts", "3");
    Map<String, String> hdfs = new LinkedHashMap<>();
    hdfs.put("dfs.replication", Integer.toString(opts.replication));
    hdfs.put("dfs.namenode.rpc-address", opts.host + ":" + cluster.getNameNodePort());
    hdfs.put("dfs.namenode.http-address", httpAddr());
    hdfs.put("dfs.webhdfs.enabled", "true");
    hdfs.put("dfs.client.use.datanode.hostname", "false");
    hdfs.put("dfs.permissions.enabled", "true");
    if (opts.blockSize > 0) {
      hdfs.put("dfs.blocksize", Long.toString(opts.blockSize));
    }
    writeSite(opts.confDir.resolve("core-site.xml"), core);
    writeSite(opts.confDir.resolve("hdfs-site.xml"), hdfs);
  }

  /** Writes a Hadoop {@code *-site.xml} file (atomically). */
  public static void writeSite(Path file, Map<String, String> props) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
      w.write("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
      w.write("<!-- Written by org.tfrecordio.minihdfs.MiniHdfs for a test cluster. -->\n");
      w.write("<configuration>\n");
      for (Map.Entry<String, String> e : props.entrySet()) {
        w.write("  <property><name>" + xml(e.getKey()) + "</name><value>" + xml(e.getValue())
            + "</value></property>\n");
      }
      w.write("</configuration>\n");
    }
    Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  private static String xml(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;");
  }

  @Override
  protected String answer(String[] words) throws IOException {
    switch (words[0]) {
      case "stop-datanode":
        stopDataNode(index(words));
        return String.join(" ", words);
      case "restart-datanode":
        restartDataNode(index(words));
        return String.join(" ", words);
      default:
        throw unknown(words);
    }
  }

  private int index(String[] parts) {
    if (parts.length != 2) {
      throw new IllegalArgumentException("expected: " + parts[0] + " INDEX");
    }
    int i = Integer.parseInt(parts[1]);
    if (i < 0 || i >= dnXferPorts.size()) {
      throw new IllegalArgumentException(
          "no DataNode " + i + " (there are " + dnXferPorts.size() + ")");
    }
    return i;
  }

  private int currentPosition(int startupIndex) {
    int port = dnXferPorts.get(startupIndex);
    List<org.apache.hadoop.hdfs.server.datanode.DataNode> dns = cluster.getDataNodes();
    for (int j = 0; j < dns.size(); j++) {
      if (dns.get(j).getXferPort() == port) {
        return j;
      }
    }
    return -1;
  }

  private synchronized void stopDataNode(int i) {
    int pos = currentPosition(i);
    if (pos < 0 || stoppedDns.containsKey(i)) {
      throw new IllegalStateException("DataNode " + i + " is already stopped");
    }
    stoppedDns.put(i, cluster.stopDataNode(pos));
  }

  private synchronized void restartDataNode(int i) throws IOException {
    org.apache.hadoop.hdfs.MiniDFSCluster.DataNodeProperties props = stoppedDns.remove(i);
    if (props == null) {
      throw new IllegalStateException("DataNode " + i + " is not stopped");
    }
    if (!cluster.restartDataNode(props, true)) {
      throw new IOException("DataNode " + i + " did not restart");
    }
    cluster.waitActive();
  }

  @Override
  protected void shutdown() {
    if (cluster != null) {
      try {
        cluster.shutdown(true);
      } catch (Throwable t) {
        warn("error during shutdown: " + t);
      }
    }
  }
}
