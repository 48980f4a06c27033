// File-system helpers with crash-safe semantics: atomic whole-file replacement (temp file, fsync,
// rename, fsync of the directory), whole-file reads, mkdir -p, and an append-only line log whose
// torn last line (from a crash mid-write) can be detected and cut off on resume, and an
// exclusive lock file (flock) that names its holder.
// Every failure throws sl::Error naming the path and the OS reason (strerror).
// Not here: file formats (see core/safetensors.h), what a lock's record says (its users).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sl {

// Writes `bytes` to `path + ".tmp.<pid>"` in the same directory, fsyncs it, renames it over
// `path` and fsyncs the directory. On failure the temp file is removed, any previous `path` is
// left intact, and sl::Error is thrown.
// Fault injection for the kill tests: with STACKLAB_KILL_AFTER_WRITES=N in the environment the
// process SIGKILLs itself right after its N-th completed write_file_atomic (N >= 1), so a test
// can stop a run between any two of its writes, not only at a lucky instant
// (tests/cli/extension_test.cpp; docs/testing.md).
void write_file_atomic(const std::string& path, std::string_view bytes);

// The whole content of `path`; sl::Error if it is missing or unreadable.
std::string read_file(const std::string& path);

// Input files that must be ordinary files of bounded size (data files, configs): a FIFO would block
// the open, a device such as /dev/zero or /dev/urandom would be read until memory runs out. So
// the type and size are checked with stat before anything opens the file, and the file is opened
// non-blocking and checked again. Each failure throws sl::Error "<what> '<path>': <why>", e.g.
// "data.path '/dev/zero': is a character device, not a regular file".
void check_regular_file(const std::string& path, std::uint64_t max_bytes, const std::string& what);
// The whole content of such a file (also refused when it grows past `max_bytes` while read).
std::string read_regular_file(const std::string& path, std::uint64_t max_bytes,
                              const std::string& what);
// "1 GiB", "16 MiB", "512 bytes": a size cap as the messages and docs state it.
std::string size_text(std::uint64_t bytes);

// mkdir -p: creates `path` and its missing parents; fine if it already is a directory.
void make_dirs(const std::string& path);

// An append-only log of text lines (metrics.jsonl). Each line goes out in one write(2) call on
// an O_APPEND descriptor, so it is in the file (or the kernel's page cache) when write_line
// returns and a crash can tear at most the last line. Move-only; closes on destruction.
class LineLog {
 public:
  explicit LineLog(const std::string& path);  // creates the file if needed, appends otherwise
  ~LineLog();
  LineLog(LineLog&& other) noexcept;
  LineLog& operator=(LineLog&& other) noexcept;
  LineLog(const LineLog&) = delete;
  LineLog& operator=(const LineLog&) = delete;

  // Appends `line` plus '\n'. `line` must not contain '\n' (a trailing one is accepted).
  void write_line(std::string_view line);
  // fdatasync: forces written lines to disk (write_line alone survives a process crash, not
  // a power loss).
  void sync();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// An exclusive lock on a file, taken with flock(2) without waiting: held until release or
// destruction, and dropped by the kernel when the process dies however it dies, so a crash never
// leaves it held. The file holds a record of its holder (text, written by the user) for others
// to read. Move-only.
class FileLock {
 public:
  // Opens `path` (created if missing) and tries to lock it. held() says whether it did;
  // previous_record() is what the file held at that moment: the holder's record when not held,
  // the last holder's when held (empty after a clean release_and_remove). The descriptor is
  // close-on-exec: a program the holder starts does not hold the lock (flock belongs to the open
  // file, which an inherited descriptor would share), so the lock ends with its holder. sl::Error
  // when the file cannot be opened or flock fails other than by being held.
  static FileLock try_lock(const std::string& path);
  ~FileLock();  // releases the lock; the file and its record stay
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }
  const std::string& previous_record() const { return previous_; }
  const std::string& path() const { return path_; }
  // Replaces the record and fsyncs it (held only).
  void write_record(std::string_view text);
  // Removes the file, then releases the lock (held only; nothing otherwise). A process that
  // opened the file before and gets the lock after sees it was removed and tries again.
  void release_and_remove() noexcept;

 private:
  FileLock(std::string path, int fd, std::string previous);
  std::string path_;
  int fd_ = -1;
  std::string previous_;
};

// The host name (gethostname; "unknown" if it fails) and whether a process of this host is
// alive (kill(pid, 0)): what a lock or task record names its holder by.
std::string host_name();
bool process_alive(long long pid);

// The newline-terminated lines of `path`, without their '\n'; a last line with no newline
// (torn by a crash) is dropped. sl::Error if the file cannot be read.
std::vector<std::string> read_complete_lines(const std::string& path);

// Cuts `path` back to its last '\n' (to empty if there is none), so appends after a resume
// start on a fresh line. A file that already ends in '\n' is untouched.
void truncate_torn_tail(const std::string& path);

}  // namespace sl
