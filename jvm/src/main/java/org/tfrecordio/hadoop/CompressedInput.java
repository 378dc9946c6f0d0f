package org.tfrecordio.hadoop;

import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.compress.CodecPool;
import org.apache.hadoop.io.compress.CompressionCodec;
import org.apache.hadoop.io.compress.DefaultCodec;
import org.apache.hadoop.io.compress.Decompressor;
import org.apache.hadoop.io.compress.GzipCodec;
import org.tfrecordio.codec.CorruptStreamException;

/**
 * The decompressed bytes of a compressed file, read through a Hadoop codec. When the codec
 * cannot decode any further (a truncated stream, a CRC failure, an invalid block, bytes after
 * the last complete stream, a gzip header with reserved flag bits), it first returns every byte
 * the codec can produce before the damage, then throws a {@link CorruptStreamException} saying
 * what is wrong. I/O errors of the
 * file itself (not decoding errors) pass through unchanged. A file of no bytes at all is an
 * empty stream, as the Python readers and TensorFlow read it, not a truncated one.
 *
 * <p>A codec loses the output of the call that fails. So, after a decoding error other than a
 * truncated stream, the file is decoded again ({@link RecoveringInflater} for gzip and zlib; the
 * codec one output byte per call for others) and the bytes after those already delivered are
 * returned up to the damage: only damaged files pay for this.
 */
final class CompressedInput extends InputStream {
  private final FileSystem fs;
  private final Path path;
  private final CompressionCodec codec;
  private final String format;

  private FSDataInputStream file;
  private WatchedInput watched;
  private Decompressor decompressor;
  private InputStream in;
  private long delivered;
  private InputStream recovery;
  private CorruptStreamException pending;
  // The file holds no bytes at all: no records, and no damage.
  private boolean emptyFile;
  // How far the codec read the file before it was closed: the progress made, while the bytes
  // before the damage are decoded again.
  private long releasedPosition;

  CompressedInput(FileSystem fs, Path path, CompressionCodec codec) throws IOException {
    this.fs = fs;
    this.path = path;
    this.codec = codec;
    this.format = formatName(codec);
    try {
      open();
    } catch (IOException | RuntimeException e) {
      release();
      throw e;
    }
  }

  private static String formatName(CompressionCodec codec) {
    if (codec instanceof GzipCodec) {
      return "gzip";
    }
    if (codec instanceof DefaultCodec) { // DefaultCodec and DeflateCodec: zlib streams
      return "zlib";
    }
    return codec.getClass().getSimpleName();
  }

  private void open() throws IOException {
    file = fs.open(path);
    watched = new WatchedInput(file);
    decompressor = CodecPool.getDecompressor(codec);
    Decompressor checked =
        format.equals("gzip") && decompressor != null ? new GzipFlagCheck(decompressor)
            : decompressor;
    in = codec.createInputStream(watched, checked);
  }

  private void release() throws IOException {
    try {
      if (file != null) {
        try {
          releasedPosition = Math.max(releasedPosition, file.getPos());
        } finally {
          file.close();
        }
      }
    } finally {
      file = null;
      if (decompressor != null) {
        CodecPool.returnDecompressor(decompressor);
        decompressor = null;
      }
    }
  }

  /** Position in the compressed file, for progress: it never goes back. */
  long compressedPosition() throws IOException {
    return file == null ? releasedPosition : Math.max(releasedPosition, file.getPos());
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    int r = read(one, 0, 1);
    return r < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (len == 0) {
      return 0;
    }
    if (recovery != null) {
      int r = recovery.read(b, off, len);
      if (r < 0) {
        throw pending;
      }
      return r;
    }
    if (pending != null) {
      throw pending;
    }
    if (emptyFile) {
      return -1;
    }
    int r;
    try {
      r = in.read(b, off, len);
    } catch (IOException | RuntimeException | InternalError e) {
      if (watched.failure == null && watched.ended && watched.bytes == 0) {
        emptyFile = true; // the codec found no header: there was nothing to decode
        return -1;
      }
      pending = damage(e);
      if (e instanceof EOFException || len == 1) {
        throw pending; // nothing was lost: the codec returned all it had before
      }
      return recover(b, off, len);
    }
    if (r > 0) {
      delivered += r;
    }
    return r;
  }

  /**
   * After a decoding error that may have cost the output of the failing call: decodes the file
   * again and returns the bytes after those delivered, up to the damage.
   */
  private int recover(byte[] b, int off, int len) throws IOException {
    release();
    if (format.equals("gzip") || format.equals("zlib")) {
      recovery = new RecoveringInflater(() -> fs.open(path), format.equals("gzip"), delivered);
    } else {
      recovery = new CodecBytes(delivered);
    }
    return read(b, off, len);
  }

  /** Another codec, decoded again one output byte per call after the delivered bytes. */
  private final class CodecBytes extends InputStream {
    CodecBytes(long skip) throws IOException {
      open();
      byte[] scratch = new byte[64 * 1024];
      long left = skip;
      try {
        while (left > 0) {
          int r = in.read(scratch, 0, (int) Math.min(scratch.length, left));
          if (r < 0) {
            break;
          }
          left -= r;
        }
      } catch (IOException | RuntimeException | InternalError e) {
        left = -1; // fails earlier than before: nothing more to return
      }
      if (left != 0) {
        release();
      }
    }

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (file == null) {
        return -1;
      }
      int n = 0;
      while (n < len) {
        int r;
        try {
          r = in.read(b, off + n, 1);
        } catch (IOException | RuntimeException | InternalError e) {
          release();
          break;
        }
        if (r < 0) {
          release();
          break;
        }
        n += r;
      }
      return n > 0 ? n : -1;
    }
  }

  /** The decoding error {@code e}, or {@code e} itself if reading the file failed. */
  private CorruptStreamException damage(Throwable e) throws IOException {
    if (watched.failure != null) {
      if (e instanceof IOException) {
        throw (IOException) e;
      }
      throw watched.failure;
    }
    String what = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return new CorruptStreamException("damaged " + format + " stream: " + what, e);
  }

  @Override
  public void close() throws IOException {
    try {
      if (recovery != null) {
        recovery.close();
      }
    } finally {
      release();
    }
  }

  /** The file's stream, remembering whether reading it failed, and how much it gave. */
  private static final class WatchedInput extends FilterInputStream {
    IOException failure;
    /** Bytes read from the file. */
    long bytes;
    /** Whether the end of the file was reached. */
    boolean ended;

    WatchedInput(InputStream in) {
      super(in);
    }

    @Override
    public int read() throws IOException {
      int r;
      try {
        r = super.read();
      } catch (IOException e) {
        failure = e;
        throw e;
      }
      if (r < 0) {
        ended = true;
      } else {
        bytes++;
      }
      return r;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int r;
      try {
        r = in.read(b, off, len);
      } catch (IOException e) {
        failure = e;
        throw e;
      }
      if (r < 0) {
        ended = true;
      } else {
        bytes += r;
      }
      return r;
    }

    @Override
    public long skip(long n) throws IOException {
      long skipped;
      try {
        skipped = super.skip(n);
      } catch (IOException e) {
        failure = e;
        throw e;
      }
      bytes += Math.max(skipped, 0);
      return skipped;
    }
  }
}
