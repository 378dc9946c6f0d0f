package org.tfrecordio.spark.cluster;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.util.Map;
import org.apache.spark.ExecutorLostFailure;
import org.apache.spark.Success$;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.scheduler.TaskInfo;
import org.apache.spark.scheduler.TaskLocality;
import org.apache.spark.scheduler.cluster.ExecutorInfo;
import org.junit.Test;
import scala.Option;

/** The listener fed Spark's own events, as the listener bus delivers them. */
public class ExecutorLossesTest {
  private static final String KILLED =
      "Container killed by YARN for exceeding physical memory limits. 2.4 GB of 2 GB physical "
          + "memory used. Consider boosting spark.executor.memoryOverhead.";

  private static TaskInfo task(long id, String executor, String host) {
    return new TaskInfo(id, 0, 0, 0, 0L, executor, host, TaskLocality.PROCESS_LOCAL(), false);
  }

  private static ExecutorInfo yarnExecutor(String host, String container) {
    scala.collection.immutable.Map<String, String> none =
        new scala.collection.immutable.Map.Map1<>("HTTP_SCHEME", "http://");
    return new ExecutorInfo(host, 2, none,
        new scala.collection.immutable.Map.Map1<>(ExecutorLosses.CONTAINER_ATTRIBUTE, container));
  }

  @Test
  public void aRemovedExecutorsReasonHostAndContainerAreFoundByTheTaskItRan() throws Exception {
    ExecutorLosses losses = new ExecutorLosses();
    losses.onExecutorAdded(new SparkListenerExecutorAdded(1L, "2",
        yarnExecutor("nm-1", "container_1_0001_01_000003")));
    losses.onTaskStart(new SparkListenerTaskStart(0, 0, task(7L, "2", "nm-1")));
    losses.onExecutorRemoved(new SparkListenerExecutorRemoved(2L, "2", KILLED));

    Map<String, String> loss = losses.lossOfTask(7L, 0L);
    assertEquals("2", loss.get("executor"));
    assertEquals("nm-1", loss.get("host"));
    assertEquals("container_1_0001_01_000003", loss.get("container"));
    assertEquals(KILLED, loss.get("reason"));
  }

  @Test
  public void aTaskEndedByExecutorLostFailureCarriesItsReasonBeforeTheRemoval() throws Exception {
    ExecutorLosses losses = new ExecutorLosses();
    losses.onTaskStart(new SparkListenerTaskStart(0, 0, task(3L, "1", "198.18.0.11")));
    ExecutorLostFailure failure =
        new ExecutorLostFailure("1", false, Option.apply("worker lost: 198.18.0.11:7078"));
    losses.onTaskEnd(new SparkListenerTaskEnd(0, 0, "ResultTask", failure,
        task(3L, "1", "198.18.0.11"), null, null));

    Map<String, String> loss = losses.lossOfTask(3L, 0L);
    assertEquals("worker lost: 198.18.0.11:7078", loss.get("reason"));
    assertEquals("198.18.0.11", loss.get("host"));
    assertFalse("no container off YARN", loss.containsKey("container"));
  }

  @Test
  public void aWaitingReaderIsWokenByTheRemoval() throws Exception {
    ExecutorLosses losses = new ExecutorLosses();
    losses.onTaskStart(new SparkListenerTaskStart(0, 0, task(5L, "4", "h")));
    Thread remover = new Thread(() -> {
      try {
        Thread.sleep(200);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      losses.onExecutorRemoved(new SparkListenerExecutorRemoved(3L, "4", "Executor killed"));
    });
    long start = System.nanoTime();
    remover.start();
    Map<String, String> loss = losses.lossOfTask(5L, 10_000L);
    remover.join();
    assertEquals("Executor killed", loss.get("reason"));
    assertTrue("woken, not timed out", System.nanoTime() - start < 5_000_000_000L);
  }

  @Test
  public void aRunningTaskIsFoundAfterMoreThanTheRememberedTasksStartedAndEnded()
      throws Exception {
    // A cluster's barrier task runs for the whole training while feeding jobs run many tasks
    // beside it: when its executor goes, its loss must still be found by its id.
    ExecutorLosses losses = new ExecutorLosses();
    losses.onTaskStart(new SparkListenerTaskStart(0, 0, task(1L, "2", "nm-1")));
    for (long id = 2; id < ExecutorLosses.MAX_ENTRIES + 100; id++) {
      losses.onTaskStart(new SparkListenerTaskStart(1, 0, task(id, "3", "nm-2")));
      losses.onTaskEnd(new SparkListenerTaskEnd(1, 0, "ResultTask", Success$.MODULE$,
          task(id, "3", "nm-2"), null, null));
    }
    losses.onExecutorRemoved(new SparkListenerExecutorRemoved(2L, "2", KILLED));

    Map<String, String> loss = losses.lossOfTask(1L, 0L);
    assertNotNull("the running task is remembered", loss);
    assertEquals("2", loss.get("executor"));
    assertEquals(KILLED, loss.get("reason"));
  }

  @Test
  public void aLiveExecutorHasNoReasonAfterTheWaitAndAnUnknownTaskNothing() throws Exception {
    ExecutorLosses losses = new ExecutorLosses();
    losses.onTaskStart(new SparkListenerTaskStart(0, 0, task(9L, "1", "h")));
    losses.onTaskEnd(new SparkListenerTaskEnd(0, 0, "ResultTask", Success$.MODULE$,
        task(9L, "1", "h"), null, null));

    Map<String, String> loss = losses.lossOfTask(9L, 50L);
    assertEquals("1", loss.get("executor"));
    assertFalse(loss.containsKey("reason"));
    assertNull(losses.lossOfTask(10L, 0L));
  }
}
