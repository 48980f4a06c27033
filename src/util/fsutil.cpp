// File-system helpers on POSIX calls (open/write/fsync/rename), so that every failure is seen
// with its errno rather than hidden behind a stream's bad bit.
#include "util/fsutil.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "util/error.h"

namespace sl {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw Error("[fs] " + what + " '" + path + "': " + std::strerror(err));
}

// Writes all of `bytes`, retrying short writes and EINTR. Returns 0 or the errno.
int write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

// pwrite of all of `bytes` at offset 0 (a lock record: the fd is not O_APPEND). 0 or the errno.
int write_all_at_start(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

std::string parent_dir(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

// Removes the temp file unless released (after the rename consumed it).
struct TempFileGuard {
  std::string path;
  int fd = -1;
  bool armed = true;
  ~TempFileGuard() {
    if (fd >= 0) ::close(fd);
    if (armed) ::unlink(path.c_str());
  }
};

// STACKLAB_KILL_AFTER_WRITES=N (see fsutil.h): SIGKILL after the N-th completed atomic write.
void kill_after_counted_write() {
  static const long limit = [] {
    const char* v = std::getenv("STACKLAB_KILL_AFTER_WRITES");
    return v != nullptr ? std::strtol(v, nullptr, 10) : 0L;
  }();
  static long done = 0;
  if (limit > 0 && ++done == limit) ::raise(SIGKILL);
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create temp file for", path, errno);
  TempFileGuard guard{tmp, fd};
  if (int err = write_all(fd, bytes)) fail("cannot write", path, err);
  if (::fsync(fd) != 0) fail("cannot fsync", path, errno);
  guard.fd = -1;
  if (::close(fd) != 0) fail("cannot close", path, errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename temp file over", path, errno);
  guard.armed = false;

  // The rename is durable only once the directory entry is on disk.
  const std::string dir = parent_dir(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail("cannot open directory of", path, errno);
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0) fail("cannot fsync directory of", path, err);
  kill_after_counted_write();
}

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", path, errno);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      fail("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

namespace {

// Why the file of mode `mode` is not a regular file, or "" when it is.
std::string not_regular(mode_t mode) {
  if (S_ISREG(mode)) return "";
  if (S_ISDIR(mode)) return "is a directory";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "is a character device";
  if (S_ISBLK(mode)) return "is a block device";
  if (S_ISSOCK(mode)) return "is a socket";
  return "is a special file";
}

// The checks on one stat result; `what` and `path` name the file.
void check_stat(const struct stat& st, const std::string& path, std::uint64_t max_bytes,
                const std::string& what) {
  if (const std::string why = not_regular(st.st_mode); !why.empty())
    throw Error(what + " '" + path + "': " + why + ", not a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw Error(what + " '" + path + "': " + std::to_string(st.st_size) + " bytes, above the " +
                size_text(max_bytes) + " limit");
}

}  // namespace

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
    return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

void check_regular_file(const std::string& path, std::uint64_t max_bytes, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw Error(what + " '" + path +
                "': cannot open (missing or unreadable: " + std::strerror(err) + ")");
  }
  check_stat(st, path, max_bytes, what);
}

std::string read_regular_file(const std::string& path, std::uint64_t max_bytes,
                              const std::string& what) {
  check_regular_file(path, max_bytes, what);
  // Non-blocking: a FIFO put in place after the stat must not block the open either.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    throw Error(what + " '" + path + "': cannot open (" + std::strerror(err) + ")");
  }
  struct stat st {};
  std::string out;
  try {
    if (::fstat(fd, &st) != 0) fail("cannot stat", path, errno);
    check_stat(st, path, max_bytes, what);
    out.reserve(static_cast<size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("cannot read", path, errno);
      }
      if (n == 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (out.size() > max_bytes)
        throw Error(what + " '" + path + "': grew past the " + size_text(max_bytes) +
                    " limit while read");
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return out;
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec))
    throw Error("[fs] cannot create directory '" + path + "': a file of that name exists");
  std::filesystem::create_directories(path, ec);
  if (ec) throw Error("[fs] cannot create directory '" + path + "': " + ec.message());
}

// ---- LineLog ----------------------------------------------------------------------------

LineLog::LineLog(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot open log", path, errno);
}

LineLog::~LineLog() {
  if (fd_ >= 0) ::close(fd_);
}

LineLog::LineLog(LineLog&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

LineLog& LineLog::operator=(LineLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void LineLog::write_line(std::string_view line) {
  SL_CHECK(fd_ >= 0, "write_line on a moved-from LineLog");
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line.find('\n') != std::string_view::npos)
    throw Error("[fs] log '" + path_ + "': a line must not contain a newline");
  std::string whole;
  whole.reserve(line.size() + 1);
  whole.append(line);
  whole.push_back('\n');
  // One write(2): O_APPEND places it atomically at the end. A short write means the disk is
  // full; the torn tail is then cut off by truncate_torn_tail on resume.
  ssize_t n;
  do {
    n = ::write(fd_, whole.data(), whole.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) fail("cannot append to log", path_, errno);
  if (static_cast<size_t>(n) != whole.size()) fail("short write to log", path_, ENOSPC);
}

void LineLog::sync() {
  SL_CHECK(fd_ >= 0, "sync on a moved-from LineLog");
  if (::fdatasync(fd_) != 0) fail("cannot sync log", path_, errno);
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

bool process_alive(long long pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// ---- FileLock -----------------------------------------------------------------------------

FileLock::FileLock(std::string path, int fd, std::string previous)
    : path_(std::move(path)), fd_(fd), previous_(std::move(previous)) {}

FileLock::FileLock(FileLock&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      previous_(std::move(other.previous_)) {}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

FileLock FileLock::try_lock(const std::string& path) {
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) fail("cannot open lock file", path, errno);
    const bool got = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    const int err = errno;
    std::string record;
    char buf[4096];
    for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(record.size()))) > 0;)
      record.append(buf, static_cast<size_t>(n));
    if (!got) {
      ::close(fd);
      if (err != EWOULDBLOCK) fail("cannot lock", path, err);
      return FileLock(path, -1, record);
    }
    // Locked; but if a holder removed the file between our open and our flock, this inode is no
    // longer `path` and someone else may lock the new file: start over on it.
    struct stat at_fd {
    }, at_path{};
    if (::fstat(fd, &at_fd) == 0 && ::stat(path.c_str(), &at_path) == 0 &&
        at_fd.st_ino == at_path.st_ino && at_fd.st_dev == at_path.st_dev)
      return FileLock(path, fd, record);
    ::close(fd);
  }
}

void FileLock::write_record(std::string_view text) {
  SL_CHECK(fd_ >= 0, "write_record on a lock that is not held");
  if (::ftruncate(fd_, 0) != 0) fail("cannot write the lock record", path_, errno);
  if (int err = write_all_at_start(fd_, text)) fail("cannot write the lock record", path_, err);
  ::fsync(fd_);
}

void FileLock::release_and_remove() noexcept {
  if (fd_ < 0) return;
  ::unlink(path_.c_str());
  ::close(std::exchange(fd_, -1));
}

// ---- torn tails -------------------------------------------------------------------------

std::vector<std::string> read_complete_lines(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.emplace_back(text, start, nl - start);
  return lines;  // text[start..] has no newline: torn (or empty), dropped
}

void truncate_torn_tail(const std::string& path) {
  const std::string text = read_file(path);
  size_t keep = text.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  if (keep == text.size()) return;
  if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) fail("cannot truncate", path, errno);
}

}  // namespace sl
