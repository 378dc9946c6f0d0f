package org.tfrecordio.testutil;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.zip.Deflater;
import java.util.zip.DeflaterOutputStream;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.InflaterInputStream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.CompressionOutputStream;
import org.apache.hadoop.io.compress.DefaultCodec;
import org.apache.hadoop.io.compress.GzipCodec;
import org.apache.hadoop.util.ReflectionUtils;

/**
 * Real gzip and zlib files for tests, written by the JDK ({@code java.util.zip}) or by Hadoop's
 * codecs, and an independent oracle (the JDK's decoder) of how many bytes decode before damage.
 */
public final class Compressed {
  private Compressed() {}

  private static final Configuration CONF = new Configuration();

  /** The two formats; {@link #extension} is what Hadoop's codec factory recognises. */
  public enum Format {
    GZIP(".gz", GzipCodec.class),
    ZLIB(".deflate", DefaultCodec.class);

    public final String extension;
    public final Class<? extends CompressionCodec> codec;

    Format(String extension, Class<? extends CompressionCodec> codec) {
      this.extension = extension;
      this.codec = codec;
    }

    /** Compresses with {@code java.util.zip}. */
    public byte[] jdk(byte[] data) throws IOException {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (OutputStream z = this == GZIP ? new GZIPOutputStream(out)
          : new DeflaterOutputStream(out)) {
        z.write(data);
      }
      return out.toByteArray();
    }

    /** Compresses with Hadoop's codec for this format. */
    public byte[] hadoop(byte[] data) throws IOException {
      CompressionCodec c = ReflectionUtils.newInstance(codec, CONF);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      try (CompressionOutputStream z = c.createOutputStream(out)) {
        z.write(data);
      }
      return out.toByteArray();
    }

    /**
     * Compresses {@code first} then {@code second} in one stream (JDK), with a full flush
     * between them. Returns the stream and, in {@code boundary[0]}, the offset of the first
     * byte of the block that holds {@code second}: a block header starts at its bit 0.
     */
    public byte[] flushedBetween(byte[] first, byte[] second, int[] boundary) throws IOException {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      Deflater deflater = new Deflater(Deflater.DEFAULT_COMPRESSION, this == GZIP);
      CRC32Holder crc = new CRC32Holder();
      if (this == GZIP) {
        out.write(new byte[] {0x1f, (byte) 0x8b, 8, 0, 0, 0, 0, 0, 0, (byte) 0xff});
      }
      DeflaterOutputStream z = new DeflaterOutputStream(out, deflater, 512, true);
      z.write(first);
      crc.update(first);
      z.flush();
      boundary[0] = out.size();
      z.write(second);
      crc.update(second);
      z.finish();
      deflater.end();
      if (this == GZIP) {
        writeIntLE(out, (int) crc.crc.getValue());
        writeIntLE(out, first.length + second.length);
      }
      return out.toByteArray();
    }

    /**
     * How many bytes the JDK's decoder produces from a truncated stream before its input ends
     * (a decoder loses nothing to a truncation; other damage loses the output of the failing
     * call, so tests of other damage state the decodable length themselves).
     */
    public long decodableBeforeTruncation(byte[] compressed) {
      long n = 0;
      try (InputStream in = this == GZIP
          ? new GZIPInputStream(new ByteArrayInputStream(compressed))
          : new InflaterInputStream(new ByteArrayInputStream(compressed))) {
        byte[] chunk = new byte[8192];
        int r;
        while ((r = in.read(chunk, 0, chunk.length)) > 0) {
          n += r;
        }
      } catch (IOException | RuntimeException e) {
        // damage: n bytes decoded before it
      }
      return n;
    }
  }

  private static final class CRC32Holder {
    final java.util.zip.CRC32 crc = new java.util.zip.CRC32();

    void update(byte[] b) {
      crc.update(b);
    }
  }

  private static void writeIntLE(ByteArrayOutputStream out, int v) {
    out.write(v);
    out.write(v >>> 8);
    out.write(v >>> 16);
    out.write(v >>> 24);
  }
}
