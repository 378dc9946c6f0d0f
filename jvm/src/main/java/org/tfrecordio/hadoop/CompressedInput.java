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
 * the last complete stream), it first returns every byte the codec can produce before the
 * damage, then throws a {@link CorruptStreamException} saying what is wrong. I/O errors of the
 * file itself (not decoding errors) pass through unchanged.
 *
 * <p>A codec loses the output of the call that fails. So, after the first decoding error, the
 * file is decoded again up to the bytes already delivered and then one byte per call until the
 * error recurs: only damaged files pay for this.
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
  private boolean byteByByte;
  private CorruptStreamException pending;

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
    if (codec.getClass() == DefaultCodec.class) {
      return "zlib";
    }
    return codec.getClass().getSimpleName();
  }

  private void open() throws IOException {
    file = fs.open(path);
    watched = new WatchedInput(file);
    decompressor = CodecPool.getDecompressor(codec);
    in = codec.createInputStream(watched, decompressor);
  }

  private void release() throws IOException {
    try {
      if (file != null) {
        file.close();
      }
    } finally {
      file = null;
      if (decompressor != null) {
        CodecPool.returnDecompressor(decompressor);
        decompressor = null;
      }
    }
  }

  /** Position in the compressed file, for progress. */
  long compressedPosition() throws IOException {
    return file == null ? 0 : file.getPos();
  }

  @Override
  public int read() throws IOException {
    byte[] one = new byte[1];
    int r = read(one, 0, 1);
    return r < 0 ? -1 : one[0] & 0xff;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (pending != null) {
      throw pending;
    }
    if (len == 0) {
      return 0;
    }
    if (byteByByte) {
      return readByteByByte(b, off, len);
    }
    int r;
    try {
      r = in.read(b, off, len);
    } catch (IOException | RuntimeException | InternalError e) {
      CorruptStreamException damage = damage(e);
      if (e instanceof EOFException || len == 1) {
        throw damage; // nothing was lost: the codec returned all it had before
      }
      redecode();
      return readByteByByte(b, off, len);
    }
    if (r > 0) {
      delivered += r;
    }
    return r;
  }

  /** Reads up to {@code len} bytes one per call; a decoding error ends the stream after them. */
  private int readByteByByte(byte[] b, int off, int len) throws IOException {
    int n = 0;
    while (n < len) {
      int r;
      try {
        r = in.read(b, off + n, 1);
      } catch (IOException | RuntimeException | InternalError e) {
        pending = damage(e);
        break;
      }
      if (r < 0) {
        break;
      }
      n += r;
    }
    delivered += n;
    if (n > 0) {
      return n;
    }
    if (pending != null) {
      throw pending;
    }
    return -1;
  }

  /** Decodes the file again up to the bytes already delivered. */
  private void redecode() throws IOException {
    release();
    open();
    byte[] scratch = new byte[64 * 1024];
    long left = delivered;
    while (left > 0) {
      int r;
      try {
        r = in.read(scratch, 0, (int) Math.min(scratch.length, left));
      } catch (IOException | RuntimeException | InternalError e) {
        throw damage(e);
      }
      if (r < 0) {
        throw new IOException(path + " changed while it was read: it decodes to fewer bytes");
      }
      left -= r;
    }
    byteByByte = true;
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
    release();
  }

  /** The file's stream, remembering whether reading it failed. */
  private static final class WatchedInput extends FilterInputStream {
    IOException failure;

    WatchedInput(InputStream in) {
      super(in);
    }

    @Override
    public int read() throws IOException {
      try {
        return super.read();
      } catch (IOException e) {
        failure = e;
        throw e;
      }
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      try {
        return in.read(b, off, len);
      } catch (IOException e) {
        failure = e;
        throw e;
      }
    }

    @Override
    public long skip(long n) throws IOException {
      try {
        return super.skip(n);
      } catch (IOException e) {
        failure = e;
        throw e;
      }
    }
  }
}
