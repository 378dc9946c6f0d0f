package org.tfrecordio.spark.cluster;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.ExecutorLostFailure;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskEndReason;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.TaskInfo;
import scala.Option;

/**
 * Why Spark lost an executor, as its scheduler records it: a {@link SparkListener} that keeps,
 * by executor, its host, its YARN container (the {@code CONTAINER_ID} attribute YARN executors
 * register with) and the reason of its removal ({@code onExecutorRemoved}: on YARN the
 * ApplicationMaster's text with the container's exit status and YARN's diagnostic, on a
 * standalone cluster the Master's, "worker lost" and the like); and by task, the executor it
 * ran on and an {@link ExecutorLostFailure}'s reason when it ended with one.
 *
 * <p>The same code names the cause on every cluster manager: it reads only what Spark's
 * scheduler reports. {@link #register(SparkContext)} adds one listener to a SparkContext (the
 * same one on later calls). The tables keep every running task (up to {@value #MAX_ENTRIES}:
 * a cluster's barrier tasks run for the whole training while other jobs, its feeding among
 * them, run and end any number of tasks beside them), the newest {@value #MAX_ENTRIES} ended
 * ones and the newest {@value #MAX_ENTRIES} executors. Thread-safe: the listener bus writes,
 * the Python driver reads.
 */
public final class ExecutorLosses extends SparkListener {
  /** How many running tasks, ended tasks and executors (each) are remembered. */
  public static final int MAX_ENTRIES = 10_000;

  /** YARN executors' attribute naming their container. */
  static final String CONTAINER_ATTRIBUTE = "CONTAINER_ID";

  private static final Map<SparkContext, ExecutorLosses> REGISTERED = new HashMap<>();

  private final Map<String, Executor> executors = bounded();
  /** Tasks started and not ended (as far as the listener bus said: it may drop events). */
  private final Map<Long, Task> running = bounded();
  /** Tasks ended, newest last. */
  private final Map<Long, Task> ended = bounded();

  private static final class Executor {
    String host;
    String container;
    String removal;
  }

  private static final class Task {
    final String executor;
    String lostReason;

    Task(String executor) {
      this.executor = executor;
    }
  }

  private static <K, V> Map<K, V> bounded() {
    return new LinkedHashMap<K, V>() {
      private static final long serialVersionUID = 1L;

      @Override
      protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
        return size() > MAX_ENTRIES;
      }
    };
  }

  /** The listener of {@code sc}, added to its listener bus on the first call. */
  public static ExecutorLosses register(SparkContext sc) {
    synchronized (REGISTERED) {
      ExecutorLosses losses = REGISTERED.get(sc);
      if (losses == null) {
        losses = new ExecutorLosses();
        sc.addSparkListener(losses);
        REGISTERED.put(sc, losses);
        REGISTERED.keySet().removeIf(SparkContext::isStopped);
      }
      return losses;
    }
  }

  private synchronized Executor executor(String id) {
    return executors.computeIfAbsent(id, k -> new Executor());
  }

  @Override
  public synchronized void onExecutorAdded(SparkListenerExecutorAdded added) {
    Executor e = executor(added.executorId());
    e.host = added.executorInfo().executorHost();
    Option<String> container = added.executorInfo().attributes().get(CONTAINER_ATTRIBUTE);
    if (container.isDefined()) {
      e.container = container.get();
    }
  }

  @Override
  public synchronized void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
    executor(removed.executorId()).removal = removed.reason();
    notifyAll();
  }

  @Override
  public synchronized void onTaskStart(SparkListenerTaskStart start) {
    TaskInfo info = start.taskInfo();
    running.put(info.taskId(), new Task(info.executorId()));
    Executor e = executor(info.executorId());
    if (e.host == null) {
      e.host = info.host();
    }
  }

  @Override
  public synchronized void onTaskEnd(SparkListenerTaskEnd end) {
    long id = end.taskInfo().taskId();
    TaskEndReason reason = end.reason();
    Task task = running.remove(id);
    if (reason instanceof ExecutorLostFailure) {
      ExecutorLostFailure lost = (ExecutorLostFailure) reason;
      if (task == null) {
        task = new Task(lost.execId());
      }
      task.lostReason = lost.reason().isDefined() ? lost.reason().get() : lost.toErrorString();
      notifyAll();
    } else if (task == null) {
      task = new Task(end.taskInfo().executorId());
    }
    ended.remove(id);
    ended.put(id, task);
  }

  @Override
  public void onApplicationEnd(SparkListenerApplicationEnd end) {
    synchronized (REGISTERED) {
      REGISTERED.values().remove(this);
    }
  }

  /**
   * What is known of the executor that ran task {@code taskId}, waiting up to
   * {@code timeoutMs} for the reason it was lost.
   *
   * @return null for a task never seen; else a map with {@code executor}, and when known
   *     {@code host}, {@code container} (YARN), {@code reason} (why Spark removed the executor,
   *     or the task's {@code ExecutorLostFailure} reason)
   */
  public synchronized Map<String, String> lossOfTask(long taskId, long timeoutMs)
      throws InterruptedException {
    long deadline = System.currentTimeMillis() + Math.max(0, timeoutMs);
    while (true) {
      Task task = running.get(taskId);
      if (task == null) {
        task = ended.get(taskId);
      }
      if (task == null) {
        return null;
      }
      Executor e = executor(task.executor);
      String reason = e.removal != null ? e.removal : task.lostReason;
      long left = deadline - System.currentTimeMillis();
      if (reason != null || left <= 0) {
        Map<String, String> loss = new HashMap<>();
        loss.put("executor", task.executor);
        putIfKnown(loss, "host", e.host);
        putIfKnown(loss, "container", e.container);
        putIfKnown(loss, "reason", reason);
        return loss;
      }
      wait(left);
    }
  }

  private static void putIfKnown(Map<String, String> map, String key, String value) {
    if (value != null) {
      map.put(key, value);
    }
  }
}
