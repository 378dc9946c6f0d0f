package org.tfrecordio.miniyarn;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.tfrecordio.minihdfs.MiniHdfs;
import org.tfrecordio.minihdfs.ServiceMain;

/**
 * A YARN cluster with its HDFS in one JVM, for tests and for developers: a MiniDFSCluster (one
 * NameNode, N DataNodes) and a MiniYARNCluster (one ResourceManager, M NodeManagers), every server
 * bound to 127.0.0.1 and known by it.
 *
 * <p>The NodeManagers set localized files' permissions in-process ({@link NioLocalFs}), as a
 * NodeManager with Hadoop's native library does.
 *
 * <p>The NodeManagers check the physical memory of each container's process tree, as production
 * clusters without cgroups do: a container that grows past its size is killed (strict cgroup
 * enforcement off, monitoring on; virtual memory not checked).
 *
 * <p>Usage:
 *
 * <pre>
 *   java -cp CLASSPATH org.tfrecordio.miniyarn.MiniYarn --base-dir DIR [--conf-dir DIR]
 *       [--nodemanagers M] [--nm-memory-mb MB] [--nm-vcores N] [--datanodes N]
 * </pre>
 *
 * <p>When the cluster is up, one line is printed on stdout: {@code MINIYARN READY {json}}, whose
 * {@code conf_dir} holds core-site.xml, hdfs-site.xml and yarn-site.xml for {@code
 * HADOOP_CONF_DIR}. Then it is driven over stdin as every test cluster is ({@link ServiceMain});
 * besides {@code ping} and {@code shutdown}, its commands are {@code containers} (the number of containers
 * the NodeManagers hold now); {@code nodemanagers} (a JSON list, one object per NodeManager ever
 * started: {@code index}, {@code node} (its NodeId), {@code running} and the ids of the {@code
 * containers} it holds); {@code stop-nodemanager I} (NodeManager I stops, as a host going away:
 * it kills its containers and leaves the ResourceManager, which reports them lost to their
 * applications); {@code add-nodemanager} (a new NodeManager of the same size joins, as a host
 * coming back, and is answered with its index once the ResourceManager counts it). Its stop
 * kills every container. Hadoop's log goes to {@code BASE/miniyarn.log}.
 */
public final class MiniYarn extends ServiceMain {
  private static final String HOST = MiniHdfs.LOOPBACK;

  private final Options opts;
  private org.apache.hadoop.hdfs.MiniDFSCluster hdfs;
  private org.apache.hadoop.yarn.server.MiniYARNCluster yarn;
  /** NodeManagers added by {@code add-nodemanager}, after MiniYARNCluster's own. */
  private final List<org.apache.hadoop.yarn.server.nodemanager.NodeManager> added =
      new ArrayList<>();

  static final class Options extends ServiceMain.Options {
    int nodeManagers = 2;
    int nmMemoryMb = 8192;
    int nmVcores = 4;
    int dataNodes = 1;

    @Override
    protected boolean take(String option, String value) {
      switch (option) {
        case "--nodemanagers":
          nodeManagers = Integer.parseInt(value);
          return true;
        case "--nm-memory-mb":
          nmMemoryMb = Integer.parseInt(value);
          return true;
        case "--nm-vcores":
          nmVcores = Integer.parseInt(value);
          return true;
        case "--datanodes":
          dataNodes = Integer.parseInt(value);
          return true;
        default:
          return false;
      }
    }

    @Override
    protected void check() {
      if (nodeManagers < 1 || dataNodes < 1) {
        throw new IllegalArgumentException("--nodemanagers and --datanodes must be at least 1");
      }
    }
  }

  private MiniYarn(Options opts) {
    super("miniyarn");
    this.opts = opts;
  }

  public static void main(String[] args) throws Exception {
    Options opts = new Options();
    opts.parseOrExit(
        "miniyarn",
        "MiniYarn --base-dir DIR [--conf-dir DIR] [--nodemanagers M] [--nm-memory-mb MB]"
            + " [--nm-vcores N] [--datanodes N]",
        args);
    configureLogging(opts.baseDir, "miniyarn");
    // MiniYARNCluster's work directories (Hadoop's test helpers default to ./target/test/data).
    System.setProperty("test.build.data", opts.baseDir.resolve("yarn").toString());
    System.setProperty("test.build.dir", opts.baseDir.resolve("yarn").toString());
    run(new MiniYarn(opts));
  }

  @Override
  protected String start() throws Exception {
    long t0 = System.nanoTime();
    org.apache.hadoop.conf.Configuration conf = new org.apache.hadoop.hdfs.HdfsConfiguration();
    conf.set("hadoop.tmp.dir", opts.baseDir.resolve("tmp").toString());
    conf.setInt("dfs.replication", 1);
    conf.set("hadoop.security.authentication", "simple");
    // Whoever runs Spark may write anywhere: permissions off (the HDFS tests check them).
    conf.setBoolean("dfs.permissions.enabled", false);
    MiniHdfs.bindTo(conf, HOST);
    hdfs =
        new org.apache.hadoop.hdfs.MiniDFSCluster.Builder(conf, opts.baseDir.resolve("hdfs").toFile())
            .numDataNodes(opts.dataNodes)
            .format(true)
            .checkExitOnShutdown(false)
            .checkDataNodeAddrConfig(true)
            .checkDataNodeHostConfig(true)
            .build();
    hdfs.waitActive();
    String defaultFs = "hdfs://" + HOST + ":" + hdfs.getNameNodePort();

    org.apache.hadoop.yarn.conf.YarnConfiguration y =
        new org.apache.hadoop.yarn.conf.YarnConfiguration(conf);
    y.set("fs.defaultFS", defaultFs);
    y.set("yarn.resourcemanager.hostname", HOST);
    y.set("yarn.nodemanager.hostname", HOST);
    y.set("yarn.resourcemanager.bind-host", HOST);
    y.set("yarn.nodemanager.bind-host", HOST);
    y.set("yarn.timeline-service.hostname", HOST);
    y.setBoolean("yarn.timeline-service.enabled", false);
    // Physical memory of each container's process tree checked every second; a container past
    // its size is killed. (MiniYARNCluster turns both checks off unless told to monitor; strict
    // enforcement would need cgroups.)
    y.setBoolean("yarn.minicluster.control-resource-monitoring", true);
    y.setBoolean("yarn.nodemanager.pmem-check-enabled", true);
    y.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
    y.setBoolean("yarn.nodemanager.resource.memory.enforced", false);
    y.setLong("yarn.nodemanager.container-monitor.interval-ms", 1000);
    y.setInt("yarn.nodemanager.resource.memory-mb", opts.nmMemoryMb);
    // MiniYARNCluster overwrites each NodeManager's memory with this one (default 4096).
    y.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", opts.nmMemoryMb);
    y.setInt("yarn.nodemanager.resource.cpu-vcores", opts.nmVcores);
    y.setInt("yarn.scheduler.minimum-allocation-mb", 128);
    y.setInt("yarn.scheduler.maximum-allocation-mb", opts.nmMemoryMb);
    y.setInt("yarn.scheduler.maximum-allocation-vcores", opts.nmVcores);
    // Containers see the JVM and the Python of whoever submits (PYSPARK_PYTHON comes per app).
    y.set("yarn.nodemanager.env-whitelist", "JAVA_HOME,PATH,LANG,TZ,HADOOP_CONF_DIR");
    y.setLong("yarn.nodemanager.delete.debug-delay-sec", 0);
    // A stopping NodeManager, having killed its containers, waits for its applications to finish
    // for process-kill-wait + 1.25 s, and they never do (the ResourceManager that would say so is
    // stopping too). process-kill-wait also bounds how long a kill waits for a new container's
    // pid file: 1 s (not 5) is plenty on one machine.
    y.setLong("yarn.nodemanager.process-kill-wait.ms", 1000);
    y.setInt("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", 100);
    y.setBoolean("yarn.nodemanager.disk-health-checker.enable", false);
    // Application logs stay in the NodeManagers' log dirs (no aggregation service here).
    y.setBoolean("yarn.log-aggregation-enable", false);
    // Localized files get their permissions by a system call each, as on a NodeManager with
    // Hadoop's native library, not by a chmod process each (NioLocalFs). Not in the client's
    // site files: only this JVM has the class.
    y.set("fs.AbstractFileSystem.file.impl", NioLocalFs.class.getName());

    yarn = new org.apache.hadoop.yarn.server.MiniYARNCluster("miniyarn", opts.nodeManagers, 1, 1);
    yarn.init(y);
    yarn.start();
    if (!yarn.waitForNodeManagersToConnect(60_000)) {
      throw new IOException("the NodeManagers did not register with the ResourceManager in 60 s");
    }
    writeClientConf(defaultFs, yarn.getConfig());
    return readyJson(defaultFs, yarn.getConfig(), (System.nanoTime() - t0) / 1e9);
  }

  private void writeClientConf(String defaultFs, org.apache.hadoop.conf.Configuration y)
      throws IOException {
    Map<String, String> core = new LinkedHashMap<>();
    core.put("fs.defaultFS", defaultFs);
    core.put("hadoop.security.authentication", "simple");
    core.put("ipc.client.connect.max.retries", "3");
    core.put("ipc.client.connect.max.retries.on.timeouts", "3");
    Map<String, String> hdfsSite = new LinkedHashMap<>();
    hdfsSite.put("dfs.replication", "1");
    hdfsSite.put("dfs.namenode.rpc-address", HOST + ":" + hdfs.getNameNodePort());
    hdfsSite.put("dfs.client.use.datanode.hostname", "false");
    Map<String, String> yarnSite = new LinkedHashMap<>();
    for (String key :
        new String[] {
          "yarn.resourcemanager.hostname",
          "yarn.resourcemanager.address",
          "yarn.resourcemanager.scheduler.address",
          "yarn.resourcemanager.resource-tracker.address",
          "yarn.resourcemanager.admin.address",
          "yarn.resourcemanager.webapp.address",
          "yarn.scheduler.minimum-allocation-mb",
          "yarn.scheduler.maximum-allocation-mb",
          "yarn.timeline-service.enabled",
        }) {
      String value = y.get(key);
      if (value != null) {
        yarnSite.put(key, value);
      }
    }
    MiniHdfs.writeSite(opts.confDir.resolve("core-site.xml"), core);
    MiniHdfs.writeSite(opts.confDir.resolve("hdfs-site.xml"), hdfsSite);
    MiniHdfs.writeSite(opts.confDir.resolve("yarn-site.xml"), yarnSite);
  }

  private String readyJson(
      String defaultFs, org.apache.hadoop.conf.Configuration y, double startSeconds) {
    StringBuilder sb = new StringBuilder("{");
    sb.append("\"hdfs\": ").append(q(defaultFs));
    sb.append(", \"resourcemanager\": ").append(q(y.get("yarn.resourcemanager.address")));
    sb.append(", \"webapp\": ").append(q("http://" + y.get("yarn.resourcemanager.webapp.address")));
    sb.append(", \"conf_dir\": ").append(q(opts.confDir.toString()));
    sb.append(", \"base_dir\": ").append(q(opts.baseDir.toString()));
    sb.append(", \"log\": ").append(q(opts.baseDir.resolve("miniyarn.log").toString()));
    sb.append(", \"nodemanagers\": ").append(opts.nodeManagers);
    sb.append(", \"nm_memory_mb\": ").append(opts.nmMemoryMb);
    sb.append(", \"start_seconds\": ").append(String.format(Locale.ROOT, "%.3f", startSeconds));
    return sb.append('}').toString();
  }

  /**
   * Stops the NodeManagers side by side: each kills its containers, then waits for its services
   * (its log handler alone waits 10 s for the log deletions it scheduled), which one after the
   * other made most of the time a stop took.
   */
  private void stopNodeManagers() {
    List<Thread> stopping = new ArrayList<>();
    List<org.apache.hadoop.yarn.server.nodemanager.NodeManager> all = nodeManagers();
    for (int i = 0; i < all.size(); i++) {
      org.apache.hadoop.yarn.server.nodemanager.NodeManager nm = all.get(i);
      Thread t =
          new Thread(
              () -> {
                try {
                  nm.stop();
                } catch (Throwable e) {
                  warn("error stopping a NodeManager: " + e);
                }
              },
              "miniyarn-stop-nm-" + i);
      t.start();
      stopping.add(t);
    }
    for (Thread t : stopping) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** Every NodeManager ever started, by index: MiniYARNCluster's, then the added ones. */
  private synchronized List<org.apache.hadoop.yarn.server.nodemanager.NodeManager> nodeManagers() {
    List<org.apache.hadoop.yarn.server.nodemanager.NodeManager> all = new ArrayList<>();
    for (int i = 0; i < opts.nodeManagers; i++) {
      all.add(yarn.getNodeManager(i));
    }
    all.addAll(added);
    return all;
  }

  private static boolean running(org.apache.hadoop.yarn.server.nodemanager.NodeManager nm) {
    return nm.getServiceState() == org.apache.hadoop.service.Service.STATE.STARTED;
  }

  /** Containers the running NodeManagers hold now, whatever their state. */
  private int containers() {
    int n = 0;
    for (org.apache.hadoop.yarn.server.nodemanager.NodeManager nm : nodeManagers()) {
      if (running(nm)) {
        n += nm.getNMContext().getContainers().size();
      }
    }
    return n;
  }

  private String describeNodeManagers() {
    StringBuilder sb = new StringBuilder("[");
    List<org.apache.hadoop.yarn.server.nodemanager.NodeManager> all = nodeManagers();
    for (int i = 0; i < all.size(); i++) {
      org.apache.hadoop.yarn.server.nodemanager.NodeManager nm = all.get(i);
      boolean up = running(nm);
      sb.append(i == 0 ? "" : ", ").append("{\"index\": ").append(i);
      sb.append(", \"node\": ").append(q(String.valueOf(nm.getNMContext().getNodeId())));
      sb.append(", \"running\": ").append(up).append(", \"containers\": [");
      if (up) {
        int j = 0;
        for (Object id : nm.getNMContext().getContainers().keySet()) {
          sb.append(j++ == 0 ? "" : ", ").append(q(String.valueOf(id)));
        }
      }
      sb.append("]}");
    }
    return sb.append(']').toString();
  }

  /**
   * Stops NodeManager *index* as a host leaving a cluster: it leaves the ResourceManager, which
   * completes its containers as lost for their applications, then kills them. A stopping
   * NodeManager unregisters first (its status updater is the first of its services to stop),
   * but MiniYARNCluster's own reach the ResourceManager in-process, where that unregistration
   * goes nowhere: the ResourceManager's resource tracker is told here instead, as the
   * NodeManager's RPC would tell it.
   */
  private void stopNodeManager(int index) throws Exception {
    List<org.apache.hadoop.yarn.server.nodemanager.NodeManager> all = nodeManagers();
    if (index < 0 || index >= all.size()) {
      throw new IllegalArgumentException("no NodeManager " + index + " (there are " + all.size()
          + ")");
    }
    org.apache.hadoop.yarn.server.nodemanager.NodeManager nm = all.get(index);
    if (index < opts.nodeManagers) {
      yarn.getResourceManager().getResourceTrackerService().unRegisterNodeManager(
          org.apache.hadoop.yarn.server.api.protocolrecords.UnRegisterNodeManagerRequest
              .newInstance(nm.getNMContext().getNodeId()));
    }
    nm.stop();
  }

  /**
   * Starts one more NodeManager of the cluster's size, talking to the ResourceManager over RPC as
   * a real one does, in directories of its own; returns its index once the ResourceManager
   * counts it.
   */
  private int addNodeManager() throws Exception {
    int index = nodeManagers().size();
    org.apache.hadoop.yarn.conf.YarnConfiguration conf =
        new org.apache.hadoop.yarn.conf.YarnConfiguration(yarn.getConfig());
    Path dir = opts.baseDir.resolve("yarn").resolve("added-nm-" + index);
    Path local = Files.createDirectories(dir.resolve("localDir"));
    Path logs = Files.createDirectories(dir.resolve("logDir"));
    conf.set(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_LOCAL_DIRS, local.toString());
    conf.set(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_LOG_DIRS, logs.toString());
    conf.set(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_ADDRESS, HOST + ":0");
    conf.set(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_LOCALIZER_ADDRESS, HOST + ":0");
    conf.set(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_WEBAPP_ADDRESS, HOST + ":0");
    conf.setInt(org.apache.hadoop.yarn.conf.YarnConfiguration.NM_PMEM_MB, opts.nmMemoryMb);
    conf.set(org.apache.hadoop.yarn.conf.YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
        yarn.getResourceManager().getConfig()
            .get(org.apache.hadoop.yarn.conf.YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS));
    org.apache.hadoop.yarn.server.nodemanager.NodeManager nm =
        new org.apache.hadoop.yarn.server.nodemanager.NodeManager() {
          @Override
          protected void doSecureLogin() {
            // simple authentication: no keytab to log in with
          }
        };
    int before = activeNodes();
    nm.init(conf);
    nm.start();
    synchronized (this) {
      added.add(nm);
    }
    long deadline = System.nanoTime() + 60_000_000_000L;
    while (activeNodes() <= before) {
      if (System.nanoTime() > deadline) {
        throw new IOException("the added NodeManager did not register in 60 s");
      }
      Thread.sleep(100);
    }
    return index;
  }

  private int activeNodes() throws Exception {
    return yarn.getResourceManager().getClientRMService()
        .getClusterMetrics(
            org.apache.hadoop.yarn.api.protocolrecords.GetClusterMetricsRequest.newInstance())
        .getClusterMetrics().getNumNodeManagers();
  }

  @Override
  protected String answer(String[] words) throws Exception {
    switch (words[0]) {
      case "nodemanagers":
        return describeNodeManagers();
      case "stop-nodemanager":
        if (words.length != 2) {
          throw new IllegalArgumentException("usage: stop-nodemanager INDEX");
        }
        stopNodeManager(Integer.parseInt(words[1]));
        return "stopped";
      case "add-nodemanager":
        return Integer.toString(addNodeManager());
      case "containers":
        return Integer.toString(containers());
      default:
        throw unknown(words);
    }
  }

  @Override
  protected void shutdown() {
    if (yarn != null) {
      stopNodeManagers();
      try {
        yarn.stop(); // the ResourceManager (the NodeManagers are stopped already)
      } catch (Throwable t) {
        warn("error stopping YARN: " + t);
      }
    }
    if (hdfs != null) {
      try {
        hdfs.shutdown(true);
      } catch (Throwable t) {
        warn("error stopping HDFS: " + t);
      }
    }
  }
}
