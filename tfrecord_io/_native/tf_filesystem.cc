// TensorFlow modular file system plugin for hdfs://, webhdfs://, s3://, az://, abfs(s):// and
// http(s)://.
//
// TensorFlow 2.21 has no HDFS, S3 or HTTP file system (it keeps gs://, which this plugin leaves
// alone). This plugin registers those schemes (every one tfrecord_io.fs serves) with TensorFlow's C file system API
// (filesystem_interface.h) and forwards every operation to a table of callbacks that
// tfrecord_io.tf.filesystem installs from Python (ctypes). The callbacks use tfrecord_io.fs (for
// HDFS the hdfs-native client or WebHDFS, for S3 pyarrow's client), so TensorFlow gets the same
// URLs, configuration and credentials as the rest of tfrecord-io, with no JVM and no
// libhdfs.so. TensorFlow's own C++ code (TFRecordDataset, tf.io.gfile, checkpoints) does
// everything else. Reads reach Python in chunks of at least kReadChunk bytes (a file's chunk
// is kept here and serves TensorFlow's smaller reads), so the cost of a Python call is paid per
// chunk, never per record. For a file whose Python reader does not fetch ahead on its own
// (HDFS), the plugin reads ahead: while TensorFlow parses one chunk, a thread of the plugin
// reads the next one through Python, so that TensorFlow's reading thread only copies it.
//
// Build: setup.py (build_tf_plugin) compiles this file with the installed TensorFlow's headers
// and links it to libtensorflow_framework.so.2. The Python symbols it needs are only those of
// ctypes callbacks: none; it never includes Python.h.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include <pthread.h>
#include <time.h>

#include "tensorflow/c/env.h"
#include "tensorflow/c/experimental/filesystem/filesystem_interface.h"
#include "tensorflow/c/tf_status.h"

extern "C" {

// What tfrecord_io.tf.filesystem provides. Every function reports failure by calling
// tfrecord_io_set_status(status, code, message) and returning a negative value (or -1).
// `status` is an opaque TF_Status*; codes are TF_Code values. Handles are Python-side ids.
typedef struct TFRecordIOCallbacks {
  // length, mtime (ns) and whether `uri` is a directory.
  int (*stat)(const char* uri, int64_t* length, int64_t* mtime_nsec, int* is_dir,
              void* status);
  // Opens `uri` for reading; stores a handle. Returns 1 when the plugin should read ahead (the
  // reader does not), 0 when not.
  int (*open_read)(const char* uri, int64_t* handle, void* status);
  // Reads up to n bytes at offset into buffer; returns the count (< n only at end of file).
  int64_t (*read)(int64_t handle, uint64_t offset, uint64_t n, char* buffer, void* status);
  // read_to_end: whether a read of TensorFlow's reached the end of the file (a dataset that
  // moves on to its next file; not one that stopped early).
  void (*close_read)(int64_t handle, int read_to_end);
  // Calls tfrecord_io_add_name(names, name) for each entry (children: relative names; glob:
  // full URIs). kind: 0 children of a directory, 1 matches of a glob.
  int (*list)(const char* uri, int kind, void* names, void* status);
  // Creates (truncating) `uri` for writing; stores a handle.
  int (*open_write)(const char* uri, int64_t* handle, void* status);
  int (*write)(int64_t handle, const char* data, uint64_t n, void* status);
  int (*flush)(int64_t handle, void* status);
  int (*close_write)(int64_t handle, void* status);
  // A writer TensorFlow dropped without closing it (after an error): discards what it staged
  // where the store can (an object store publishes nothing), else closes it; never fails.
  void (*abort_write)(int64_t handle);
  // kind: 0 one directory (parent must exist), 1 with parents.
  int (*mkdir)(const char* uri, int kind, void* status);
  // kind: 0 a file, 1 an empty directory, 2 a tree.
  int (*remove)(const char* uri, int kind, void* status);
  int (*rename)(const char* src, const char* dst, void* status);
  // Python's PyGILState_Check, PyEval_SaveThread and PyEval_RestoreThread: a thread that holds
  // the GIL releases it while it waits for a read-ahead, which takes the GIL to call Python.
  int (*gil_held)();
  void* (*release_gil)();
  void (*restore_gil)(void* state);
} TFRecordIOCallbacks;

}  // extern "C"

namespace {

std::atomic<const TFRecordIOCallbacks*> g_callbacks{nullptr};

// The callbacks, or nullptr with `status` set when Python has not installed them (or has
// withdrawn them at interpreter exit).
const TFRecordIOCallbacks* Callbacks(TF_Status* status) {
  const TFRecordIOCallbacks* cb = g_callbacks.load(std::memory_order_acquire);
  if (cb == nullptr) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 "tfrecord-io's file system (hdfs://, webhdfs://, s3://, az://, abfs(s)://, http(s)://) is not active "
                 "in this "
                 "process: import "
                 "tfrecord_io.tf and call tfrecord_io.tf.register_filesystems() first");
  }
  return cb;
}

// Bytes a random access file asks Python for at a time. TensorFlow's readers ask for less
// (TFRecordDataset 256 KiB by default): each Python call takes the GIL, which a busy Python
// thread (a training loop) holds for up to its switch interval (5 ms), so small calls cost far
// more than their bytes. Reads of at least this size go to Python directly.
constexpr uint64_t kReadChunk = 4 << 20;

// The largest read that is followed by a read-ahead of the same size. TensorFlow's reader asks
// for its whole buffer at once (127 MiB by default on a remote file system): a second buffer
// that large is not worth its memory.
constexpr uint64_t kMaxReadAhead = 32 << 20;

// Read-aheads running, so that withdrawing the callbacks waits until none calls Python. A
// read-ahead starts under g_flight_lock, and only while the callbacks are installed.
std::mutex g_flight_lock;
std::atomic<int> g_in_flight{0};

// Counts the forks of this process that the plugin saw (in each child). A child has none of
// its parent's threads: a read-ahead started before the fork is never joined there, and
// g_in_flight starts again from 0 (pthread_atfork, installed with the callbacks).
std::atomic<uint64_t> g_forks{0};

void AfterForkInChild() {
  g_in_flight.store(0, std::memory_order_relaxed);
  g_forks.fetch_add(1, std::memory_order_relaxed);
  new (&g_flight_lock) std::mutex();  // a parent's thread may have held it at the fork
}

// One read of the bytes [offset, offset + n) of a file, by a thread of its own.
struct ReadAhead {
  TF_Thread* thread = nullptr;  // running or not yet joined
  std::unique_ptr<char[]> data;
  uint64_t capacity = 0;
  uint64_t offset = 0;
  uint64_t n = 0;
  int64_t got = -1;  // the count read, -1 after an error (written by the thread)
  const TFRecordIOCallbacks* cb = nullptr;
  int64_t handle = -1;
  uint64_t fork = 0;  // g_forks when the thread started
};

struct ReadFile {
  int64_t handle;
  bool read_ahead;          // whether Python asked for read-ahead when it opened the file
  std::mutex lock;          // TensorFlow may read one file from several threads
  std::unique_ptr<char[]> chunk;  // bytes [chunk_offset, chunk_offset + chunk_length) of the file
  uint64_t chunk_capacity = 0;
  uint64_t chunk_offset = 0;
  uint64_t chunk_length = 0;
  uint64_t fetched_to = 0;  // where the last read through Python ended: a read from there
                            // (or from byte 0) is a scan, which is read ahead
  ReadAhead ahead;          // under lock
  bool read_to_end = false;  // under lock: a read of TensorFlow's reached the end of the file
};

struct WriteFile {
  int64_t handle;
  int64_t written = 0;  // bytes appended: TensorFlow's Tell (checkpoint and summary writers)
};

struct NameList {
  char** names = nullptr;
  int count = 0;
  int capacity = 0;
};

char* CopyString(const char* s, size_t n) {
  char* out = static_cast<char*>(std::malloc(n + 1));
  if (out != nullptr) {
    std::memcpy(out, s, n);
    out[n] = '\0';
  }
  return out;
}

void FreeNames(NameList* list) {
  for (int i = 0; i < list->count; ++i) std::free(list->names[i]);
  std::free(list->names);
  *list = NameList();
}

// ---- random access files --------------------------------------------------------------------

void RunReadAhead(void* arg) {
  auto* a = static_cast<ReadAhead*>(arg);
  TF_Status* status = TF_NewStatus();
  int64_t got = a->cb->read(a->handle, a->offset, a->n, a->data.get(), status);
  a->got = TF_GetCode(status) == TF_OK ? got : -1;  // the caller's own read reports the error
  TF_DeleteStatus(status);
  g_in_flight.fetch_sub(1, std::memory_order_release);
}

// Starts reading [offset, offset + n) of `f` ahead of TensorFlow (under f->lock). Does nothing
// once the callbacks are withdrawn, or when memory or a thread cannot be had.
void StartReadAhead(ReadFile* f, const TFRecordIOCallbacks* cb, uint64_t offset, uint64_t n) {
  ReadAhead& a = f->ahead;
  if (a.capacity < n) {
    a.data.reset(new (std::nothrow) char[n]);
    a.capacity = a.data ? n : 0;
    if (!a.data) return;
  }
  {
    std::lock_guard<std::mutex> guard(g_flight_lock);
    if (g_callbacks.load(std::memory_order_acquire) == nullptr) return;
    ++g_in_flight;
  }
  a.cb = cb;
  a.handle = f->handle;
  a.offset = offset;
  a.n = n;
  a.got = -1;
  a.fork = g_forks.load(std::memory_order_relaxed);
  TF_ThreadOptions options;
  TF_DefaultThreadOptions(&options);
  a.thread = TF_StartThread(&options, "tfrecord_io_read_ahead", RunReadAhead, &a);
  if (a.thread == nullptr) g_in_flight.fetch_sub(1, std::memory_order_release);
}

// Waits for the read-ahead of `f`, if one runs (under f->lock). A thread that holds the GIL
// (TensorFlow called from Python without releasing it) releases it meanwhile: the read-ahead
// needs it to call Python.
void JoinReadAhead(ReadFile* f) {
  ReadAhead& a = f->ahead;
  if (a.thread == nullptr) return;
  if (a.fork != g_forks.load(std::memory_order_relaxed)) {
    // Started before a fork: its thread is not in this process, and its bytes never came.
    a.thread = nullptr;
    a.got = -1;
    return;
  }
  const TFRecordIOCallbacks* cb = a.cb;
  if (cb->gil_held != nullptr && cb->gil_held()) {
    void* state = cb->release_gil();
    TF_JoinThread(a.thread);
    cb->restore_gil(state);
  } else {
    TF_JoinThread(a.thread);
  }
  a.thread = nullptr;
}

// Reads up to n bytes at offset into `dest` (under f->lock): from the read-ahead when it read
// exactly there, through Python otherwise. When `dest` is the file's chunk, the read-ahead's
// buffer becomes the chunk and the chunk's the read-ahead's, instead of a copy. For a file that
// reads ahead, a read of a scan (from byte 0, or from where the previous one ended) that filled
// `dest` starts the read-ahead of the n bytes after it; a random read starts none.
int64_t Fetch(ReadFile* f, const TFRecordIOCallbacks* cb, uint64_t offset, uint64_t n,
              char* dest, TF_Status* status) {
  JoinReadAhead(f);
  ReadAhead& a = f->ahead;
  int64_t got;
  if (a.got >= 0 && a.offset == offset && n <= a.n) {
    got = std::min<int64_t>(static_cast<int64_t>(n), a.got);
    if (dest == f->chunk.get() && a.capacity >= f->chunk_capacity) {
      std::swap(f->chunk, a.data);
      std::swap(f->chunk_capacity, a.capacity);
    } else {
      std::memcpy(dest, a.data.get(), got);
    }
  } else {
    got = cb->read(f->handle, offset, n, dest, status);
    if (got < 0) return -1;
  }
  f->ahead.got = -1;  // used once
  bool scan = offset == 0 || offset == f->fetched_to;  // not a random read (a tensor's)
  f->fetched_to = offset + static_cast<uint64_t>(got);
  if (f->read_ahead && scan && static_cast<uint64_t>(got) == n && n <= kMaxReadAhead) {
    StartReadAhead(f, cb, offset + n, n);
  }
  return got;
}

void CleanupReadFile(TF_RandomAccessFile* file) {
  auto* f = static_cast<ReadFile*>(file->plugin_file);
  if (f == nullptr) return;
  {
    std::lock_guard<std::mutex> guard(f->lock);
    JoinReadAhead(f);
  }
  const TFRecordIOCallbacks* cb = g_callbacks.load(std::memory_order_acquire);
  if (cb != nullptr) cb->close_read(f->handle, f->read_to_end ? 1 : 0);
  delete f;
  file->plugin_file = nullptr;
}

int64_t Read(const TF_RandomAccessFile* file, uint64_t offset, size_t n, char* buffer,
             TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return -1;
  auto* f = static_cast<ReadFile*>(file->plugin_file);
  std::lock_guard<std::mutex> guard(f->lock);
  int64_t got;
  if (n >= kReadChunk) {
    got = Fetch(f, cb, offset, n, buffer, status);
  } else {
    // From the chunk, and from the next one where the read goes on past its end: a chunk
    // starts where the one before ended (where its read-ahead is), whatever TensorFlow's
    // read size.
    uint64_t done = 0;
    while (done < n) {
      uint64_t pos = offset + done;
      uint64_t chunk_end = f->chunk_offset + f->chunk_length;
      if (pos < f->chunk_offset || pos >= chunk_end) {
        if (done > 0 && f->chunk_length < kReadChunk) break;  // a short chunk ends the file
        f->chunk_length = 0;
        if (f->chunk_capacity < kReadChunk) {
          f->chunk.reset(new (std::nothrow) char[kReadChunk]);
          f->chunk_capacity = f->chunk ? kReadChunk : 0;
          if (!f->chunk) {
            TF_SetStatus(status, TF_RESOURCE_EXHAUSTED, "no memory for a read buffer");
            return -1;
          }
        }
        int64_t filled = Fetch(f, cb, pos, kReadChunk, f->chunk.get(), status);
        if (filled < 0) {
          if (TF_GetCode(status) == TF_OK) TF_SetStatus(status, TF_UNKNOWN, "read failed");
          return -1;
        }
        f->chunk_offset = pos;
        f->chunk_length = static_cast<uint64_t>(filled);
        if (filled == 0) break;  // the end of the file
        chunk_end = pos + f->chunk_length;
      }
      uint64_t take = std::min<uint64_t>(n - done, chunk_end - pos);
      std::memcpy(buffer + done, f->chunk.get() + (pos - f->chunk_offset), take);
      done += take;
    }
    got = static_cast<int64_t>(done);
  }
  if (got < 0) {
    if (TF_GetCode(status) == TF_OK) TF_SetStatus(status, TF_UNKNOWN, "read failed");
    return -1;
  }
  if (static_cast<uint64_t>(got) < n) {
    f->read_to_end = true;
    TF_SetStatus(status, TF_OUT_OF_RANGE, "Read less bytes than requested");
  }
  return got;
}

// ---- writable files -------------------------------------------------------------------------

void CleanupWriteFile(TF_WritableFile* file) {
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f == nullptr) return;
  const TFRecordIOCallbacks* cb = g_callbacks.load(std::memory_order_acquire);
  if (cb != nullptr && f->handle >= 0) {
    // Not closed by TensorFlow, which drops a writer so only after an error (a copy whose
    // source failed, a GFile never closed): abandoned, so what it wrote is not published.
    cb->abort_write(f->handle);
  }
  delete f;
  file->plugin_file = nullptr;
}

void Append(const TF_WritableFile* file, const char* buffer, size_t n, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return;
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f->handle < 0) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION, "append to a closed file");
    return;
  }
  if (cb->write(f->handle, buffer, n, status) >= 0) f->written += static_cast<int64_t>(n);
}

int64_t Tell(const TF_WritableFile* file, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  return static_cast<WriteFile*>(file->plugin_file)->written;
}

void Flush(const TF_WritableFile* file, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return;
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f->handle >= 0) cb->flush(f->handle, status);
}

void Close(const TF_WritableFile* file, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return;
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (f->handle < 0) return;
  int64_t handle = f->handle;
  f->handle = -1;
  cb->close_write(handle, status);
}

// ---- the file system ------------------------------------------------------------------------

void Init(TF_Filesystem* filesystem, TF_Status* status) {
  filesystem->plugin_filesystem = nullptr;
  TF_SetStatus(status, TF_OK, "");
}

void Cleanup(TF_Filesystem* filesystem) {}

// TensorFlow's default translation keeps only the path of a URI; the callbacks need the whole
// URL (the NameNode, the bucket are in it).
char* TranslateName(const TF_Filesystem* filesystem, const char* uri) {
  return CopyString(uri, std::strlen(uri));
}

void NewRandomAccessFile(const TF_Filesystem* filesystem, const char* path,
                         TF_RandomAccessFile* file, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return;
  int64_t handle = -1;
  int read_ahead = cb->open_read(path, &handle, status);
  if (read_ahead < 0) return;
  file->plugin_file = new ReadFile{handle, read_ahead > 0};
}

void NewWritableFile(const TF_Filesystem* filesystem, const char* path, TF_WritableFile* file,
                     TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return;
  int64_t handle = -1;
  if (cb->open_write(path, &handle, status) < 0) return;
  file->plugin_file = new WriteFile{handle};
}

// Appending to a file that does not exist yet creates it, as "w" does (Keras'
// CSVLogger(append=True) on a first run); appending to an existing file is not supported.
void NewAppendableFile(const TF_Filesystem* filesystem, const char* path, TF_WritableFile* file,
                       TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return;
  int64_t length = 0, mtime = 0;
  int is_dir = 0;
  if (cb->stat(path, &length, &mtime, &is_dir, status) < 0) {
    if (TF_GetCode(status) != TF_NOT_FOUND) return;
    NewWritableFile(filesystem, path, file, status);  // a new file
    return;
  }
  TF_SetStatus(status, TF_UNIMPLEMENTED,
               (std::string("tfrecord-io's file system cannot append to an existing file: ") +
                path + " (write a new file, or read this one and write it again whole)")
                   .c_str());
}

void Stat(const TF_Filesystem* filesystem, const char* path, TF_FileStatistics* stats,
          TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return;
  int64_t length = 0, mtime = 0;
  int is_dir = 0;
  if (cb->stat(path, &length, &mtime, &is_dir, status) < 0) return;
  stats->length = length;
  stats->mtime_nsec = mtime;
  stats->is_directory = is_dir != 0;
}

void PathExists(const TF_Filesystem* filesystem, const char* path, TF_Status* status) {
  TF_FileStatistics stats;
  Stat(filesystem, path, &stats, status);
}

bool IsDirectory(const TF_Filesystem* filesystem, const char* path, TF_Status* status) {
  TF_FileStatistics stats;
  Stat(filesystem, path, &stats, status);
  if (TF_GetCode(status) != TF_OK) return false;
  if (!stats.is_directory) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 (std::string("not a directory: ") + path).c_str());
    return false;
  }
  return true;
}

int ListNames(const char* path, int kind, char*** entries, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr) return -1;
  NameList list;
  if (cb->list(path, kind, &list, status) < 0) {
    if (TF_GetCode(status) == TF_OK) TF_SetStatus(status, TF_UNKNOWN, "listing failed");
    FreeNames(&list);
    return -1;
  }
  *entries = list.names;  // TensorFlow frees each name and the array with plugin_memory_free
  return list.count;
}

int GetChildren(const TF_Filesystem* filesystem, const char* path, char*** entries,
                TF_Status* status) {
  return ListNames(path, 0, entries, status);
}

int GetMatchingPaths(const TF_Filesystem* filesystem, const char* glob, char*** entries,
                     TF_Status* status) {
  return ListNames(glob, 1, entries, status);
}

void CreateDir(const TF_Filesystem* filesystem, const char* path, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb != nullptr) cb->mkdir(path, 0, status);
}

void RecursivelyCreateDir(const TF_Filesystem* filesystem, const char* path, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb != nullptr) cb->mkdir(path, 1, status);
}

void DeleteFile(const TF_Filesystem* filesystem, const char* path, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb != nullptr) cb->remove(path, 0, status);
}

void DeleteDir(const TF_Filesystem* filesystem, const char* path, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb != nullptr) cb->remove(path, 1, status);
}

void DeleteRecursively(const TF_Filesystem* filesystem, const char* path,
                       uint64_t* undeleted_files, uint64_t* undeleted_dirs, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  *undeleted_files = 0;
  *undeleted_dirs = 0;
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb == nullptr || cb->remove(path, 2, status) < 0) *undeleted_dirs = 1;
}

void RenameFile(const TF_Filesystem* filesystem, const char* src, const char* dst,
                TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  const TFRecordIOCallbacks* cb = Callbacks(status);
  if (cb != nullptr) cb->rename(src, dst, status);
}

void* Allocate(size_t size) { return std::calloc(1, size); }

void Free(void* ptr) { std::free(ptr); }

template <typename T>
T* NewTable() {
  return static_cast<T*>(Allocate(sizeof(T)));
}

void FillOps(TF_FilesystemPluginOps* ops, const char* scheme) {
  TF_SetFilesystemVersionMetadata(ops);
  ops->scheme = CopyString(scheme, std::strlen(scheme));

  ops->random_access_file_ops = NewTable<TF_RandomAccessFileOps>();
  ops->random_access_file_ops->cleanup = CleanupReadFile;
  ops->random_access_file_ops->read = Read;

  ops->writable_file_ops = NewTable<TF_WritableFileOps>();
  ops->writable_file_ops->cleanup = CleanupWriteFile;
  ops->writable_file_ops->append = Append;
  ops->writable_file_ops->tell = Tell;
  ops->writable_file_ops->flush = Flush;
  ops->writable_file_ops->close = Close;

  TF_FilesystemOps* fs = NewTable<TF_FilesystemOps>();
  fs->init = Init;
  fs->cleanup = Cleanup;
  fs->translate_name = TranslateName;
  fs->new_random_access_file = NewRandomAccessFile;
  fs->new_writable_file = NewWritableFile;
  fs->new_appendable_file = NewAppendableFile;
  fs->create_dir = CreateDir;
  fs->recursively_create_dir = RecursivelyCreateDir;
  fs->delete_file = DeleteFile;
  fs->delete_dir = DeleteDir;
  fs->delete_recursively = DeleteRecursively;
  fs->rename_file = RenameFile;
  fs->path_exists = PathExists;
  fs->stat = Stat;
  fs->is_directory = IsDirectory;
  fs->get_children = GetChildren;
  fs->get_matching_paths = GetMatchingPaths;
  ops->filesystem_ops = fs;
}

}  // namespace

extern "C" {

// Called from Python (ctypes, which releases the GIL) to install the callbacks, or withdraw
// them (nullptr): then it returns once no read-ahead calls Python any more. The table must stay
// alive while installed.
TF_CAPI_EXPORT void tfrecord_io_set_callbacks(const TFRecordIOCallbacks* callbacks) {
  // Once (a function-local static, not std::call_once: that needs glibc 2.34's pthread_once,
  // newer than the manylinux_2_27 TensorFlow's wheel asks for).
  static const bool fork_handler = pthread_atfork(nullptr, nullptr, AfterForkInChild) == 0;
  (void)fork_handler;
  {
    std::lock_guard<std::mutex> guard(g_flight_lock);
    g_callbacks.store(callbacks, std::memory_order_release);
  }
  // At interpreter exit only, for at most one read's time: a poll costs nothing more.
  const timespec millisecond = {0, 1000000};
  while (callbacks == nullptr && g_in_flight.load(std::memory_order_acquire) > 0) {
    nanosleep(&millisecond, nullptr);
  }
}

// Called from Python once: the largest read-ahead (kMaxReadAhead), which bounds what a file
// opened ahead fetches for TensorFlow's first read of it.
TF_CAPI_EXPORT uint64_t tfrecord_io_max_read_ahead() { return kMaxReadAhead; }

// Called from Python inside a callback to report an error to TensorFlow.
TF_CAPI_EXPORT void tfrecord_io_set_status(void* status, int code, const char* message) {
  TF_SetStatus(static_cast<TF_Status*>(status), static_cast<TF_Code>(code), message);
}

// Called from Python inside a list callback, once per name. Returns 0, or -1 when out of memory.
TF_CAPI_EXPORT int tfrecord_io_add_name(void* names, const char* name) {
  auto* list = static_cast<NameList*>(names);
  if (list->count == list->capacity) {
    int capacity = list->capacity == 0 ? 16 : list->capacity * 2;
    void* grown = std::realloc(list->names, sizeof(char*) * capacity);
    if (grown == nullptr) return -1;
    list->names = static_cast<char**>(grown);
    list->capacity = capacity;
  }
  char* copy = CopyString(name, std::strlen(name));
  if (copy == nullptr) return -1;
  list->names[list->count++] = copy;
  return 0;
}

TF_CAPI_EXPORT void TF_InitPlugin(TF_FilesystemPluginInfo* info) {
  info->plugin_memory_allocate = Allocate;
  info->plugin_memory_free = Free;
  // Keep in step with tfrecord_io.tf.plugin.SCHEMES.
  info->num_schemes = 8;
  info->ops = static_cast<TF_FilesystemPluginOps*>(
      Allocate(info->num_schemes * sizeof(info->ops[0])));
  FillOps(&info->ops[0], "hdfs");
  FillOps(&info->ops[1], "webhdfs");
  FillOps(&info->ops[2], "s3");
  FillOps(&info->ops[3], "http");  // read-only, as in tfrecord_io.fs
  FillOps(&info->ops[4], "https");
  FillOps(&info->ops[5], "az");  // Azure Blob Storage and ADLS Gen2
  FillOps(&info->ops[6], "abfs");
  FillOps(&info->ops[7], "abfss");
}

}  // extern "C"
