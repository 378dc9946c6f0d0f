import java.io.BufferedOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.NullWritable;
import org.apache.hadoop.mapred.JobConf;
import org.apache.hadoop.mapred.Reporter;
import org.apache.hadoop.mapreduce.InputSplit;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.JobContext;
import org.apache.hadoop.mapreduce.OutputCommitter;
import org.apache.hadoop.mapreduce.RecordReader;
import org.apache.hadoop.mapreduce.RecordWriter;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.lib.input.FileInputFormat;
import org.apache.hadoop.mapreduce.lib.output.FileOutputFormat;
import org.apache.hadoop.mapreduce.task.JobContextImpl;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.tfrecordio.codec.TFRecordWriter;

/**
 * JVM side of bench/run.py. One mode per JVM, so the JIT profile of one benchmark never pollutes
 * another's. Every mode does one untimed warm-up pass and then {@code runs} timed passes, and
 * prints one line per pass:
 *
 * <pre>RESULT {"bench": ..., "pass": 0|1.., "warmup": bool, "seconds": s, "cpuSeconds": c,
 * "bytes": b, "records": n, "lengthSum": l}</pre>
 *
 * <p>{@code bytes} are file bytes (TFRecord framing included); {@code lengthSum} is the sum of
 * record lengths seen by the reader (a correctness check and what keeps the loop honest);
 * {@code cpuSeconds} is the CPU time (user + system) of the thread(s) doing the work. Hadoop
 * settings can be added with {@code -Dbench.conf.KEY=VALUE}.
 *
 * <p>Modes:
 *
 * <pre>
 * gen FILE RECORD_BYTES RECORDS                 write the test file (codec writer, java.io)
 * read-raw FILE RUNS                            FileSystem.open + read(byte[1 MiB]) loop
 * read-mapreduce FILE RUNS                      mapreduce TFRecordInputFormat, one split
 * read-mapred FILE RUNS                         mapred TFRecordInputFormat, one split
 * write-raw DIR RECORD_BYTES RECORDS RUNS       FileSystem.create + write(1 MiB) of the same bytes
 * write-mapreduce DIR RECORD_BYTES RECORDS RUNS mapreduce TFRecordOutputFormat (data + index)
 * split-scaling DIR RUNS                        2 indexed splits: 1 thread vs 2 threads
 * </pre>
 */
public final class FormatBench {
  private static final int CHUNK = 1 << 20;
  private static final int POOL_BYTES = 64 << 20;

  private FormatBench() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    switch (mode) {
      case "gen":
        gen(args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]));
        break;
      case "read-raw":
        repeat(mode, Integer.parseInt(args[2]), () -> readRaw(new Path(args[1])));
        break;
      case "read-mapreduce":
        repeat(mode, Integer.parseInt(args[2]), () -> readMapreduce(new Path(args[1])));
        break;
      case "read-mapred":
        repeat(mode, Integer.parseInt(args[2]), () -> readMapred(new Path(args[1])));
        break;
      case "write-raw":
      case "write-mapreduce": {
        Path dir = new Path(args[1]);
        int size = Integer.parseInt(args[2]);
        long records = Long.parseLong(args[3]);
        BytesWritable[] pool = pool(size);
        boolean raw = mode.equals("write-raw");
        repeat(mode, Integer.parseInt(args[4]), () -> {
          FileSystem fs = dir.getFileSystem(conf());
          fs.delete(dir, true); // untimed: the previous pass's output
          long c0 = cpuNanos();
          long t0 = System.nanoTime();
          Stats s = raw ? writeRaw(dir, size, records) : writeMapreduce(dir, pool, records);
          s.seconds = (System.nanoTime() - t0) / 1e9;
          s.cpuSeconds = (cpuNanos() - c0) / 1e9;
          return s;
        });
        break;
      }
      case "split-scaling":
        splitScaling(new Path(args[1]), Integer.parseInt(args[2]));
        break;
      default:
        throw new IllegalArgumentException("unknown mode " + mode);
    }
  }

  /** The outcome of one pass. */
  static final class Stats {
    double seconds;
    double cpuSeconds = -1;
    long bytes;
    long records;
    long lengthSum;

    Stats add(Stats o) {
      bytes += o.bytes;
      records += o.records;
      lengthSum += o.lengthSum;
      cpuSeconds = Math.max(cpuSeconds, 0) + Math.max(o.cpuSeconds, 0);
      return this;
    }
  }

  interface Pass {
    Stats run() throws Exception;
  }

  /** One untimed warm-up pass, then {@code runs} timed passes. */
  static void repeat(String bench, int runs, Pass pass) throws Exception {
    for (int i = 0; i <= runs; i++) {
      long c0 = cpuNanos();
      long t0 = System.nanoTime();
      Stats s = pass.run();
      if (s.seconds == 0) {
        s.seconds = (System.nanoTime() - t0) / 1e9;
      }
      if (s.cpuSeconds < 0) {
        s.cpuSeconds = (cpuNanos() - c0) / 1e9;
      }
      report(bench, i, s, "");
    }
  }

  /**
   * A Hadoop configuration with any {@code -Dbench.conf.KEY=VALUE} system properties applied
   * (run.py's {@code --conf KEY=VALUE}), e.g. {@code tfrecord.input.buffer.bytes}.
   */
  static Configuration conf() {
    Configuration conf = new Configuration();
    for (String name : System.getProperties().stringPropertyNames()) {
      if (name.startsWith("bench.conf.")) {
        conf.set(name.substring("bench.conf.".length()), System.getProperty(name));
      }
    }
    return conf;
  }

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  /** CPU time (user + system) of the calling thread: robust to other load on the machine. */
  static long cpuNanos() {
    return THREADS.getCurrentThreadCpuTime();
  }

  static void report(String bench, int pass, Stats s, String extra) {
    System.out.println(String.format(Locale.ROOT,
        "RESULT {\"bench\": \"%s\", \"pass\": %d, \"warmup\": %s, \"seconds\": %.6f, "
            + "\"cpuSeconds\": %.6f, \"bytes\": %d, \"records\": %d, \"lengthSum\": %d%s}",
        bench, pass, pass == 0, s.seconds, s.cpuSeconds, s.bytes, s.records, s.lengthSum,
        extra));
    System.out.flush();
  }

  // ------------------------------------------------------------------------------------------
  // data

  /** Fills {@code b} with pseudo-random bytes (xorshift64*), fast enough not to matter. */
  static long fill(byte[] b, int off, int len, long state) {
    int end = off + len;
    while (off < end) {
      state ^= state >>> 12;
      state ^= state << 25;
      state ^= state >>> 27;
      long v = state * 0x2545F4914F6CDD1DL;
      for (int k = 0; k < 8 && off < end; k++) {
        b[off++] = (byte) v;
        v >>>= 8;
      }
    }
    return state;
  }

  /** Writes RECORDS records of RECORD_BYTES random bytes each, every record distinct. */
  static void gen(String file, int size, long records) throws IOException {
    byte[] rec = new byte[size];
    long state = 0x9E3779B97F4A7C15L ^ size;
    try (OutputStream os = new FileOutputStream(file);
        TFRecordWriter w = new TFRecordWriter(os)) {
      for (long i = 0; i < records; i++) {
        state = fill(rec, 0, size, state);
        w.write(rec, 0, size);
      }
    }
  }

  /** Distinct random records totalling about 64 MiB, cycled through by the write benchmarks. */
  static BytesWritable[] pool(int size) {
    int n = Math.max(1, POOL_BYTES / size);
    BytesWritable[] pool = new BytesWritable[n];
    long state = 0x2545F4914F6CDD1DL ^ size;
    for (int i = 0; i < n; i++) {
      byte[] b = new byte[size];
      state = fill(b, 0, size, state);
      pool[i] = new BytesWritable(b);
    }
    return pool;
  }

  // ------------------------------------------------------------------------------------------
  // reads

  static Stats readRaw(Path path) throws IOException {
    Configuration conf = conf();
    FileSystem fs = path.getFileSystem(conf);
    Stats s = new Stats();
    byte[] buf = new byte[CHUNK];
    long touch = 0;
    try (FSDataInputStream in = fs.open(path)) {
      int r;
      while ((r = in.read(buf, 0, CHUNK)) >= 0) {
        s.bytes += r;
        touch += buf[0];
      }
    }
    s.lengthSum = touch; // not checked; only keeps the reads observable
    return s;
  }

  /** A configuration whose input is {@code path}, read as ONE split. */
  static Job oneSplitJob(Path path) throws IOException {
    Job job = Job.getInstance(conf());
    job.getConfiguration().setLong(FileInputFormat.SPLIT_MINSIZE, Long.MAX_VALUE);
    FileInputFormat.setInputPaths(job, path);
    return job;
  }

  static TaskAttemptContext taskContext(Configuration conf, int task) {
    return new TaskAttemptContextImpl(conf,
        new TaskAttemptID("bench", 1, TaskType.MAP, task, 0));
  }

  static Stats readMapreduce(Path path) throws Exception {
    Job job = oneSplitJob(path);
    org.tfrecordio.mapreduce.TFRecordInputFormat format =
        new org.tfrecordio.mapreduce.TFRecordInputFormat();
    List<InputSplit> splits = format.getSplits(job);
    if (splits.size() != 1) {
      throw new IllegalStateException("expected 1 split, got " + splits.size());
    }
    Stats s = readSplit(format, splits.get(0), job.getConfiguration(), 0);
    s.bytes = path.getFileSystem(job.getConfiguration()).getFileStatus(path).getLen();
    return s;
  }

  /** Reads one split through createRecordReader/initialize/nextKeyValue, as a task does. */
  static Stats readSplit(org.tfrecordio.mapreduce.TFRecordInputFormat format, InputSplit split,
      Configuration conf, int task) throws Exception {
    long c0 = cpuNanos();
    TaskAttemptContext ctx = taskContext(conf, task);
    Stats s = new Stats();
    try (RecordReader<BytesWritable, NullWritable> rr = format.createRecordReader(split, ctx)) {
      rr.initialize(split, ctx);
      while (rr.nextKeyValue()) {
        s.records++;
        s.lengthSum += rr.getCurrentKey().getLength();
      }
    }
    s.bytes = split.getLength();
    s.cpuSeconds = (cpuNanos() - c0) / 1e9;
    return s;
  }

  static Stats readMapred(Path path) throws IOException {
    JobConf job = new JobConf(conf());
    job.setLong(FileInputFormat.SPLIT_MINSIZE, Long.MAX_VALUE);
    org.apache.hadoop.mapred.FileInputFormat.setInputPaths(job, path);
    org.tfrecordio.mapred.TFRecordInputFormat format =
        new org.tfrecordio.mapred.TFRecordInputFormat();
    org.apache.hadoop.mapred.InputSplit[] splits = format.getSplits(job, 1);
    if (splits.length != 1) {
      throw new IllegalStateException("expected 1 split, got " + splits.length);
    }
    Stats s = new Stats();
    org.apache.hadoop.mapred.RecordReader<BytesWritable, NullWritable> rr =
        format.getRecordReader(splits[0], job, Reporter.NULL);
    try {
      BytesWritable key = rr.createKey();
      NullWritable value = rr.createValue();
      while (rr.next(key, value)) {
        s.records++;
        s.lengthSum += key.getLength();
      }
    } finally {
      rr.close();
    }
    s.bytes = splits[0].getLength();
    return s;
  }

  // ------------------------------------------------------------------------------------------
  // writes

  /** The same number of bytes as the TFRecord file, from a 64 MiB random buffer, 1 MiB writes. */
  static Stats writeRaw(Path dir, int size, long records) throws IOException {
    long total = records * (size + 16L);
    byte[] data = RawData.BYTES;
    FileSystem fs = dir.getFileSystem(conf());
    Stats s = new Stats();
    try (FSDataOutputStream out = fs.create(new Path(dir, "raw.bin"), false)) {
      long off = 0;
      while (s.bytes < total) {
        int n = (int) Math.min(CHUNK, total - s.bytes);
        if (off + n > data.length) {
          off = 0;
        }
        out.write(data, (int) off, n);
        off += n;
        s.bytes += n;
      }
    }
    s.records = records;
    return s;
  }

  /** 64 MiB of random bytes, made on first use (untimed: the warm-up pass makes it). */
  private static final class RawData {
    static final byte[] BYTES = new byte[POOL_BYTES];

    static {
      fill(BYTES, 0, BYTES.length, 0x1234567890ABCDEFL);
    }
  }

  /**
   * setupJob, setupTask, getRecordWriter, RECORDS writes, close (data file and index), and
   * commitTask/commitJob, so the output ends up in DIR as a job would leave it.
   */
  static Stats writeMapreduce(Path dir, BytesWritable[] pool, long records) throws Exception {
    Job job = Job.getInstance(conf());
    FileOutputFormat.setOutputPath(job, dir);
    Configuration conf = job.getConfiguration();
    TaskAttemptContext ctx = taskContext(conf, 0);
    JobContext jctx = new JobContextImpl(conf, ctx.getTaskAttemptID().getJobID());
    org.tfrecordio.mapreduce.TFRecordOutputFormat format =
        new org.tfrecordio.mapreduce.TFRecordOutputFormat();
    OutputCommitter committer = format.getOutputCommitter(ctx);
    committer.setupJob(jctx);
    committer.setupTask(ctx);
    RecordWriter<BytesWritable, NullWritable> w = format.getRecordWriter(ctx);
    NullWritable nul = NullWritable.get();
    Stats s = new Stats();
    int p = 0;
    for (long i = 0; i < records; i++) {
      BytesWritable key = pool[p];
      if (++p == pool.length) {
        p = 0;
      }
      w.write(key, nul);
      s.lengthSum += key.getLength();
    }
    w.close(ctx);
    committer.commitTask(ctx);
    committer.commitJob(jctx);
    s.records = records;
    s.bytes = records * (pool[0].getLength() + 16L);
    return s;
  }

  // ------------------------------------------------------------------------------------------
  // split scaling

  /**
   * Reads the data file(s) in DIR (written by the OutputFormat, with their index) cut into two
   * splits: one thread reading both splits in sequence vs two threads reading one each.
   */
  static void splitScaling(Path dir, int runs) throws Exception {
    Job job = Job.getInstance(conf());
    FileInputFormat.setInputPaths(job, dir);
    Configuration conf = job.getConfiguration();
    FileSystem fs = dir.getFileSystem(conf);
    long total = 0;
    for (org.apache.hadoop.fs.FileStatus st : fs.listStatus(dir,
        p -> !p.getName().startsWith("_") && !p.getName().startsWith("."))) {
      total += st.getLen();
    }
    long half = (total + 1) / 2;
    conf.setLong(FileInputFormat.SPLIT_MINSIZE, half);
    conf.setLong(FileInputFormat.SPLIT_MAXSIZE, half);
    org.tfrecordio.mapreduce.TFRecordInputFormat format =
        new org.tfrecordio.mapreduce.TFRecordInputFormat();
    long t0 = System.nanoTime();
    List<InputSplit> splits = format.getSplits(job);
    double planSeconds = (System.nanoTime() - t0) / 1e9;
    if (splits.size() != 2) {
      throw new IllegalStateException("expected 2 splits, got " + splits.size()
          + " (is the index there?)");
    }
    StringBuilder lens = new StringBuilder();
    for (InputSplit sp : splits) {
      lens.append(lens.length() == 0 ? "" : ", ").append(sp.getLength());
    }
    String extra = String.format(Locale.ROOT, ", \"getSplitsSeconds\": %.6f, \"splitBytes\": [%s]",
        planSeconds, lens);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      // warm-up of both modes, then the timed passes interleaved
      for (int i = 0; i <= runs; i++) {
        for (int threads = 1; threads <= 2; threads++) {
          long start = System.nanoTime();
          Stats s = new Stats();
          if (threads == 1) {
            for (int k = 0; k < splits.size(); k++) {
              s.add(readSplit(format, splits.get(k), conf, k));
            }
          } else {
            List<Future<Stats>> fs2 = new ArrayList<>();
            for (int k = 0; k < splits.size(); k++) {
              final int task = k;
              fs2.add(pool.submit(() -> readSplit(format, splits.get(task), conf, task)));
            }
            for (Future<Stats> f : fs2) {
              s.add(f.get());
            }
          }
          s.seconds = (System.nanoTime() - start) / 1e9;
          report("split-scaling-" + threads + "t", i, s, extra);
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
