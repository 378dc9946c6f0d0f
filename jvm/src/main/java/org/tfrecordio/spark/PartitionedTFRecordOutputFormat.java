package org.tfrecordio.spark;

import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.Text;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.util.ReflectionUtils;
import org.tfrecordio.hadoop.FileRecordWriter;

/**
 * Writes TFRecord files into partition subdirectories ({@code org.apache.hadoop.mapreduce}
 * API): each key is the relative directory of its record (such as {@code year=2024/kind=a}),
 * each value the record. Files go to the task's work directory of the job's output committer,
 * as {@code <dir>/part-r-NNNNN.tfrecord} (plus the sidecar index), so the committer publishes
 * all of a task's directories or none, and a failed job leaves no output but its temporary
 * directory. Compression and the index as in {@link org.tfrecordio.mapreduce.TFRecordOutputFormat}.
 *
 * <p>One file is open at a time: records should come grouped by directory (the DataFrame
 * writer sorts each partition by the partition columns). If a directory comes back after
 * another one, a new file {@code part-r-NNNNN-cK.tfrecord} is started there.
 */
public class PartitionedTFRecordOutputFormat extends FileOutputFormat<Text, BytesWritable> {

  @Override
  public RecordWriter<Text, BytesWritable> getRecordWriter(TaskAttemptContext job)
      throws IOException {
    Configuration conf = job.getConfiguration();
    CompressionCodec codec = null;
    if (getCompressOutput(job)) {
      codec = ReflectionUtils.newInstance(getOutputCompressorClass(job, GzipCodec.class), conf);
    }
    String ext = FileRecordWriter.extension(conf, codec);
    Path file = getDefaultWorkFile(job, ext);
    Path work = file.getParent();
    String stem = file.getName().substring(0, file.getName().length() - ext.length());
    CompressionCodec fileCodec = codec;
    return new RecordWriter<Text, BytesWritable>() {
      private final Text dir = new Text();
      private FileRecordWriter writer;
      private final Map<String, Integer> opened = new HashMap<>();

      @Override
      public void write(Text key, BytesWritable value) throws IOException {
        if (writer == null || !key.equals(dir)) {
          if (writer != null) {
            FileRecordWriter w = writer;
            writer = null;
            w.close();
          }
          String d = key.toString();
          for (String seg : d.split("/", -1)) {
            if (seg.isEmpty() || seg.equals(".") || seg.equals("..")) {
              throw new IOException("not a relative partition directory: '" + d + "'");
            }
          }
          int n = opened.merge(d, 1, Integer::sum);
          String name = n == 1 ? stem + ext : stem + "-c" + n + ext;
          writer = new FileRecordWriter(conf, new Path(new Path(work, d), name), fileCodec);
          dir.set(key);
        }
        writer.write(value);
      }

      @Override
      public void close(TaskAttemptContext context) throws IOException {
        if (writer != null) {
          FileRecordWriter w = writer;
          writer = null;
          w.close();
        }
      }
    };
  }
}
