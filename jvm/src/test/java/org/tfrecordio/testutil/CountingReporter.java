package org.tfrecordio.testutil;

import org.apache.hadoop.mapred.Counters;
import org.apache.hadoop.mapred.InputSplit;
import org.apache.hadoop.mapred.Reporter;

/** A {@link Reporter} ({@code mapred} API) that keeps real Hadoop counters. */
public final class CountingReporter implements Reporter {
  public final Counters counters = new Counters();
  private String status = "";

  @Override
  public void setStatus(String status) {
    this.status = status;
  }

  public String getStatus() {
    return status;
  }

  @Override
  public Counters.Counter getCounter(Enum<?> name) {
    return counters.findCounter(name);
  }

  @Override
  public Counters.Counter getCounter(String group, String name) {
    return counters.findCounter(group, name);
  }

  @Override
  public void incrCounter(Enum<?> key, long amount) {
    counters.incrCounter(key, amount);
  }

  @Override
  public void incrCounter(String group, String counter, long amount) {
    counters.incrCounter(group, counter, amount);
  }

  @Override
  public InputSplit getInputSplit() {
    throw new UnsupportedOperationException("no input split");
  }

  @Override
  public float getProgress() {
    return 0f;
  }

  @Override
  public void progress() {}

  public long value(Enum<?> name) {
    return counters.findCounter(name).getValue();
  }
}
