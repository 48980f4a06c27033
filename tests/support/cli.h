// Test helpers for driving the built `stacklab` binary: run it with arguments (fork/exec, no
// shell, output captured), start it in the background to signal it, read files and JSON lines
// of a run directory, and make temporary directories. Header-only so every test folder can use
// it without a build change. Not here: any knowledge of what a command should print.
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sl::testing {

inline const std::string kStacklab = STACKLAB_BINARY;
inline const std::string kSourceDir = STACKLAB_SOURCE_DIR;

// configs/base.json, the config the CLI tests start from (absolute: tests never depend on the cwd).
inline std::string base_config() { return kSourceDir + "/configs/base.json"; }

// Overrides that shrink base.json to a model that trains in milliseconds per step on one thread.
inline std::vector<std::string> tiny_model_args() {
  return {"--model.n_layer=2",     "--model.n_embd=16",    "--model.n_head=2",
          "--model.block_size=16", "--train.batch_size=4", "--train.max_iters=40",
          "--train.threads=1"};
}

// a followed by b.
inline std::vector<std::string> concat(std::vector<std::string> a,
                                       const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// How a child ended: exit_code >= 0 after a normal exit, else term_signal is the signal.
struct RunResult {
  int exit_code = -1;
  int term_signal = 0;
  std::string out;     // stdout
  std::string output;  // stdout then stderr: where the tests look for messages
};

inline std::ostream& operator<<(std::ostream& os, const RunResult& r) {
  return os << "exit " << r.exit_code << " signal " << r.term_signal << ", output:\n" << r.output;
}

// A fresh directory under the test temp dir (mkdtemp), removed by the caller or left for the OS.
inline std::string make_temp_dir(const std::string& stem = "stacklab") {
  std::string pattern = ::testing::TempDir() + "/" + stem + "_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  return std::filesystem::path(buf.data()).lexically_normal().string();  // TempDir() ends with '/'
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A child process running `stacklab args...` with stdout and stderr going to temp files.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args) {
    log_dir_ = make_temp_dir("child");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      const int out = open((log_dir_ + "/stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err = open((log_dir_ + "/stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0 || err < 0) _exit(127);
      dup2(out, STDOUT_FILENO);
      dup2(err, STDERR_FILENO);
      close(out);
      close(err);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(kStacklab.c_str()));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(kStacklab.c_str(), argv.data());
      _exit(127);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
  }

  void signal(int sig) const { kill(pid_, sig); }
  pid_t pid() const { return pid_; }

  RunResult wait() {
    RunResult r;
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {}
    waited_ = true;
    if (WIFEXITED(st)) r.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) r.term_signal = WTERMSIG(st);
    r.out = read_text(log_dir_ + "/stdout");
    r.output = r.out + read_text(log_dir_ + "/stderr");
    return r;
  }

  // True while the child has not exited (checked without reaping it).
  bool running() const {
    siginfo_t info{};
    info.si_pid = 0;
    return waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == 0;
  }

 private:
  pid_t pid_ = -1;
  bool waited_ = false;
  std::string log_dir_;
};

// Runs `stacklab args...` to completion.
inline RunResult run_stacklab(const std::vector<std::string>& args) {
  Child c(args);
  return c.wait();
}

// The complete lines of a JSON-lines file, each parsed (a line that does not parse fails the test).
// A last line without its newline is a record a live run is still writing: it is left out (a test
// polling a running run's log read one half-written under ASan and failed).
inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> out;
  const std::string text = read_text(path);
  std::istringstream in(
      text.substr(0, text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1));
  std::string line;
  while (std::getline(in, line)) {
    try {
      out.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << path << ": line does not parse: " << line << " (" << e.what() << ")";
    }
  }
  return out;
}

// Whether `part` occurs in `s` (a command's output, a file's text).
inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

inline nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(read_text(path));
}

// The records of one kind ("train", "eval", "layers", ...).
inline std::vector<nlohmann::json> records_of(const std::vector<nlohmann::json>& all,
                                              const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const auto& r : all)
    if (r.value("kind", "") == kind) out.push_back(r);
  return out;
}

// Polls `pred` every 5 ms for up to `timeout`; returns whether it became true.
template <class Pred>
bool wait_until(Pred pred, std::chrono::milliseconds timeout = std::chrono::milliseconds(30000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

}  // namespace sl::testing
