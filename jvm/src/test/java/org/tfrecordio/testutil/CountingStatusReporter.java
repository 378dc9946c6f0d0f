package org.tfrecordio.testutil;

import org.apache.hadoop.mapreduce.Counter;
import org.apache.hadoop.mapreduce.Counters;
import org.apache.hadoop.mapreduce.StatusReporter;

/** A {@link StatusReporter} ({@code mapreduce} API) that keeps real Hadoop counters. */
public final class CountingStatusReporter extends StatusReporter {
  public final Counters counters = new Counters();
  private String status = "";

  @Override
  public Counter getCounter(Enum<?> name) {
    return counters.findCounter(name);
  }

  @Override
  public Counter getCounter(String group, String name) {
    return counters.findCounter(group, name);
  }

  @Override
  public void progress() {}

  @Override
  public float getProgress() {
    return 0f;
  }

  @Override
  public void setStatus(String status) {
    this.status = status;
  }

  public String getStatus() {
    return status;
  }

  public long value(Enum<?> name) {
    return counters.findCounter(name).getValue();
  }
}
