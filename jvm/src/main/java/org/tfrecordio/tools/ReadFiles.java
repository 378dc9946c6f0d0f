package org.tfrecordio.tools;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.io.BytesWritable;
import org.tfrecordio.codec.CorruptRecordException;
import org.tfrecordio.hadoop.SplitReader;
import org.tfrecordio.hadoop.TFRecordConfig;

/**
 * Reads local TFRecord files with the reader that the InputFormats use, and prints one JSON
 * line per file, for cross-checking other readers (the Python one) on the same files.
 *
 * <pre>
 * java -cp tfrecord-io.jar:PYSPARK/jars/* org.tfrecordio.tools.ReadFiles \
 *     --policy fail|skip [--compression auto|none|gzip|zlib] FILE...
 * </pre>
 *
 * <p>Each line: {@code {"path": FILE as given, "records": N, "sha256": hex, "skipped_records": n,
 * "skipped_bytes": n, "error": null or {"offset": N, "message": "..."}}}. The SHA-256 is over
 * every record read, in order, each as its length (8 bytes, little-endian) then its bytes; under
 * the fail policy it covers the records read before the error. {@code offset} is the byte offset
 * (in the uncompressed stream) of the damaged record, or null for an error that is not damage
 * (a missing file). Exit status 0 once a line was printed for every file, 2 for bad arguments.
 */
public final class ReadFiles {
  private ReadFiles() {}

  public static void main(String[] args) throws Exception {
    String policy = null;
    String compression = "auto";
    List<String> files = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--policy") && i + 1 < args.length) {
        policy = args[++i];
      } else if (a.equals("--compression") && i + 1 < args.length) {
        compression = args[++i];
      } else if (a.startsWith("--")) {
        usage("unknown option " + a);
        return;
      } else {
        files.add(a);
      }
    }
    if (policy == null || !(policy.equals("fail") || policy.equals("skip"))) {
      usage("--policy must be fail or skip");
      return;
    }
    if (!compression.matches("auto|none|gzip|zlib")) {
      usage("--compression must be auto, none, gzip or zlib");
      return;
    }
    Configuration conf = configuration(policy, compression);
    PrintStream out = new PrintStream(System.out, true, "UTF-8");
    for (String file : files) {
      out.println(read(conf, file));
    }
  }

  private static void usage(String problem) {
    System.err.println("ReadFiles: " + problem + "\nusage: ReadFiles --policy fail|skip "
        + "[--compression auto|none|gzip|zlib] FILE...");
    System.exit(2);
  }

  /** The configuration the InputFormats would read with; local files without checksum files. */
  static Configuration configuration(String policy, String compression) {
    Configuration conf = new Configuration();
    conf.set(TFRecordConfig.CORRUPT_POLICY, policy);
    conf.set(TFRecordConfig.INPUT_COMPRESSION, compression);
    conf.set("fs.file.impl", RawLocalFileSystem.class.getName());
    conf.setBoolean("fs.file.impl.disable.cache", true);
    return conf;
  }

  /** Reads one local file; returns its JSON line. */
  static String read(Configuration conf, String file) throws NoSuchAlgorithmException {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    long records = 0;
    long skippedRecords = 0;
    long skippedBytes = 0;
    String error = "null";
    File local = new File(file).getAbsoluteFile();
    Path path = new Path(local.toURI().toString());
    try (SplitReader reader = new SplitReader(conf, path, 0, Math.max(local.length(), 1))) {
      BytesWritable value = new BytesWritable();
      byte[] length = new byte[8];
      try {
        while (reader.next(value)) {
          int n = value.getLength();
          for (int i = 0; i < 8; i++) {
            length[i] = (byte) ((long) n >>> (8 * i));
          }
          sha.update(length);
          sha.update(value.getBytes(), 0, n);
          records++;
        }
      } catch (CorruptRecordException e) {
        error = "{\"offset\": " + e.getOffset() + ", \"message\": " + quote(e.getMessage()) + "}";
      } finally {
        skippedRecords = reader.reader().getSkippedRecords();
        skippedBytes = reader.reader().getSkippedBytes();
      }
    } catch (IOException | RuntimeException e) {
      if (error.equals("null")) {
        error = "{\"offset\": null, \"message\": " + quote(String.valueOf(e)) + "}";
      }
    }
    return "{\"path\": " + quote(file) + ", \"records\": " + records + ", \"sha256\": \""
        + hex(sha.digest()) + "\", \"skipped_records\": " + skippedRecords
        + ", \"skipped_bytes\": " + skippedBytes + ", \"error\": " + error + "}";
  }

  private static String hex(byte[] b) {
    StringBuilder s = new StringBuilder(b.length * 2);
    for (byte x : b) {
      s.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
    }
    return s.toString();
  }

  /** A JSON string literal. */
  static String quote(String s) {
    StringBuilder q = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          q.append("\\\"");
          break;
        case '\\':
          q.append("\\\\");
          break;
        case '\n':
          q.append("\\n");
          break;
        case '\r':
          q.append("\\r");
          break;
        case '\t':
          q.append("\\t");
          break;
        default:
          if (c < 0x20) {
            q.append(String.format("\\u%04x", (int) c));
          } else {
            q.append(c);
          }
      }
    }
    return q.append('"').toString();
  }
}
