package org.tfrecordio.miniyarn;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * The NodeManagers' local file system ({@code fs.AbstractFileSystem.file.impl}): Hadoop's
 * {@code LocalFs}, except that a permission is set by Java, in this process.
 *
 * <p>Without Hadoop's native library (not on Maven Central, so not on the test classpath)
 * {@code RawLocalFileSystem.setPermission} starts one {@code chmod} process per file, and a
 * NodeManager localizing a packed Python environment sets the permission of every one of its
 * ~30,000 files: about 70 s per NodeManager. A production NodeManager has the native library and
 * sets them with a system call each, as this does.
 */
public final class NioLocalFs extends ChecksumFs {
  /** Called by Hadoop's {@code AbstractFileSystem.get} for {@code file:} URIs. */
  public NioLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new Raw(uri, conf));
  }

  /** {@code RawLocalFs} over {@link NioRawLocalFileSystem}. */
  private static final class Raw extends DelegateToFileSystem {
    Raw(URI uri, Configuration conf) throws IOException, URISyntaxException {
      super(uri, new NioRawLocalFileSystem(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
    }

    @Override
    public int getUriDefaultPort() {
      return -1; // as RawLocalFs: no authority
    }

    @Override
    @SuppressWarnings("deprecation")
    public FsServerDefaults getServerDefaults() throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public FsServerDefaults getServerDefaults(Path f) throws IOException {
      return LocalConfigKeys.getServerDefaults();
    }

    @Override
    public boolean isValidName(String src) {
      return true; // as RawLocalFs: any local path
    }
  }

  /** {@link RawLocalFileSystem} whose {@code setPermission} is one system call. */
  static final class NioRawLocalFileSystem extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(permission.toShort()));
    }
  }

  /** The POSIX permission bits of {@code mode} (owner, group, others: read, write, execute). */
  static Set<PosixFilePermission> posix(int mode) {
    PosixFilePermission[] bits = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (int i = 0; i < bits.length; i++) {
      if ((mode & (1 << i)) != 0) {
        set.add(bits[i]);
      }
    }
    return set;
  }
}
