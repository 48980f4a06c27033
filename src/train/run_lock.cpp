// The run directory's lock: acquisition (refusal naming the holder, takeover of a stale one)
// and release (the lock file and any directory made only to hold it are removed).
#include "train/run_lock.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// The directories `make_dirs(dir)` is about to create, deepest first.
std::vector<std::string> missing_dirs(const std::string& dir) {
  std::vector<std::string> missing;
  std::error_code ec;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    if (p.filename().empty()) p = p.parent_path();  // a trailing '/'
    missing.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  return missing;
}

// Who a lock record names (written by acquire below).
struct Holder {
  long long pid = 0;
  std::string host, command;
};

// False when the record is empty (a clean release) or unreadable.
bool parse_holder(const std::string& record, Holder& h) {
  try {
    const nlohmann::json j = nlohmann::json::parse(record);
    if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer()) return false;
    h.pid = j["pid"].get<long long>();
    h.host = j.value("host", std::string("?"));
    h.command = j.value("command", std::string());
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

std::string describe(const Holder& h) {
  return "pid " + std::to_string(h.pid) + " on host " + h.host +
         (h.command.empty() ? "" : ": " + h.command);
}

}  // namespace

RunLock::RunLock(FileLock file, std::vector<std::string> created)
    : file_(std::move(file)), created_(std::move(created)) {}

RunLock::~RunLock() {
  if (!file_.held()) return;  // moved from
  file_.release_and_remove();
  std::error_code ec;
  for (const std::string& d : created_)
    if (!fs::is_directory(d, ec) || !fs::is_empty(d, ec) || !fs::remove(d, ec)) break;
}

RunLock RunLock::acquire(const std::string& run_dir, const std::string& command, bool create) {
  std::vector<std::string> created;
  if (create) {
    created = missing_dirs(run_dir);
    make_dirs(run_dir);
  }
  const std::string path = run_dir + "/" + kRunLockFile;
  FileLock file = FileLock::try_lock(path);
  Holder before;
  const bool known = parse_holder(file.previous_record(), before);
  if (!file.held()) {
    throw Error(
        run_dir + " is in use by another stacklab train (" +
        (known ? describe(before) : std::string("holder unknown: ") + path + " is unreadable") +
        "); wait for it to end, or stop it with kill -TERM " +
        (known ? std::to_string(before.pid) : "PID") +
        " (it checkpoints and exits), then run this again");
  }
  RunLock lock(std::move(file), std::move(created));
  if (known && before.pid != static_cast<long long>(getpid())) {
    const bool here = before.host == host_name();
    std::printf("note: %s: taking over the lock of %s, %s\n", path.c_str(),
                describe(before).c_str(),
                here && !process_alive(before.pid)
                    ? "a process that is gone (killed before it could release it)"
                    : "which no longer holds it");
    std::fflush(stdout);
  }
  lock.file_.write_record(nlohmann::json{{"pid", static_cast<long long>(getpid())},
                                         {"host", host_name()},
                                         {"command", command}}
                              .dump() +
                          "\n");
  return lock;
}

}  // namespace sl
