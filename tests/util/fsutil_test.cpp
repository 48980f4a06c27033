// Tests for util/fsutil: atomic replacement (including failures that must leave the old file
// and no temp file behind), reads, mkdir -p, the append-only LineLog, torn-tail handling and
// the flock-based FileLock.
// A full disk is simulated with RLIMIT_FSIZE (write then fails with EFBIG).
#include "util/fsutil.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "util/error.h"

namespace sl {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class FsUtil : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sl_fsutil_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  // Names in the directory other than `keep` (temp files would show up here).
  std::vector<std::string> other_files(const std::string& keep) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != keep) out.push_back(e.path().filename().string());
    return out;
  }
  std::string dir_;
};

using LineLogTest = FsUtil;

void write_plain(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(FsUtil, WriteFileAtomicCreatesTheFileWithExactBytes) {
  std::string bytes("a\0b\nc", 5);
  write_file_atomic(path("x.bin"), bytes);
  EXPECT_EQ(read_file(path("x.bin")), bytes);
  EXPECT_TRUE(other_files("x.bin").empty());
}

TEST_F(FsUtil, WriteFileAtomicReplacesAnExistingFileWhole) {
  write_plain(path("x.txt"), std::string(1000, 'o'));
  write_file_atomic(path("x.txt"), "new");
  EXPECT_EQ(read_file(path("x.txt")), "new");
  EXPECT_TRUE(other_files("x.txt").empty());
}

TEST_F(FsUtil, WriteFileAtomicIntoAMissingDirectoryThrowsNamingThePath) {
  const std::string target = path("no/such/dir/x.txt");
  std::string msg = error_of([&] { write_file_atomic(target, "data"); });
  EXPECT_NE(msg.find(target), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  EXPECT_TRUE(other_files("").empty());
}

TEST_F(FsUtil, WriteFileAtomicIntoAnUnwritableDirectoryThrowsAndLeavesTheOldFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  write_plain(path("x.txt"), "old");
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  std::string msg = error_of([&] { write_file_atomic(path("x.txt"), "new"); });
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  EXPECT_EQ(read_file(path("x.txt")), "old");
  EXPECT_TRUE(other_files("x.txt").empty());
}

TEST_F(FsUtil, WriteFileAtomicOnAFullDiskThrowsRemovesTheTempFileAndKeepsTheOldFile) {
  write_plain(path("x.txt"), "old");
  // RLIMIT_FSIZE makes write(2) fail with EFBIG past 4 KiB, as a full disk would with ENOSPC.
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string msg = error_of([&] { write_file_atomic(path("x.txt"), std::string(100000, 'n')); });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find("cannot write"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path("x.txt")), std::string::npos) << msg;
  EXPECT_EQ(read_file(path("x.txt")), "old");
  EXPECT_TRUE(other_files("x.txt").empty());
}

TEST_F(FsUtil, WriteFileAtomicInTheCurrentDirectoryWorksWithABareName) {
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  write_file_atomic("bare.txt", "ok");
  fs::current_path(cwd);
  EXPECT_EQ(read_file(path("bare.txt")), "ok");
}

TEST_F(FsUtil, ReadFileOfAMissingFileThrowsNamingIt) {
  std::string msg = error_of([&] { read_file(path("missing.txt")); });
  EXPECT_NE(msg.find(path("missing.txt")), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
}

TEST_F(FsUtil, ReadFileOfADirectoryThrows) {
  std::string msg = error_of([&] { read_file(dir_); });
  EXPECT_NE(msg.find("Is a directory"), std::string::npos) << msg;
}

TEST_F(FsUtil, MakeDirsCreatesNestedDirectoriesAndAcceptsExistingOnes) {
  make_dirs(path("a/b/c"));
  EXPECT_TRUE(fs::is_directory(path("a/b/c")));
  EXPECT_NO_THROW(make_dirs(path("a/b/c")));
}

TEST_F(FsUtil, MakeDirsThroughAFileThrowsNamingThePath) {
  write_plain(path("file"), "x");
  std::string msg = error_of([&] { make_dirs(path("file/sub")); });
  EXPECT_NE(msg.find(path("file/sub")), std::string::npos) << msg;
  msg = error_of([&] { make_dirs(path("file")); });
  EXPECT_NE(msg.find("a file of that name exists"), std::string::npos) << msg;
}

TEST_F(LineLogTest, WritesWholeLinesAndAppendsAcrossReopens) {
  {
    LineLog log(path("m.jsonl"));
    log.write_line(R"({"step":1})");
    log.write_line("{\"step\":2}\n");  // a trailing newline is not doubled
    // Visible to a reader before the log is closed: nothing is buffered in-process.
    EXPECT_EQ(read_file(path("m.jsonl")), "{\"step\":1}\n{\"step\":2}\n");
    log.sync();
  }
  LineLog again(path("m.jsonl"));
  again.write_line("third");
  EXPECT_EQ(read_complete_lines(path("m.jsonl")),
            (std::vector<std::string>{R"({"step":1})", R"({"step":2})", "third"}));
}

TEST_F(LineLogTest, RejectsALineWithAnEmbeddedNewline) {
  LineLog log(path("m.jsonl"));
  EXPECT_THROW(log.write_line("a\nb"), Error);
  EXPECT_EQ(read_file(path("m.jsonl")), "");
}

TEST_F(LineLogTest, OpeningInAMissingDirectoryThrowsNamingThePath) {
  std::string msg = error_of([&] { LineLog log(path("nope/m.jsonl")); });
  EXPECT_NE(msg.find(path("nope/m.jsonl")), std::string::npos) << msg;
}

TEST_F(LineLogTest, ReadCompleteLinesDropsATornLastLine) {
  write_plain(path("m.jsonl"), "one\ntwo\n{\"st");
  EXPECT_EQ(read_complete_lines(path("m.jsonl")), (std::vector<std::string>{"one", "two"}));
  write_plain(path("m.jsonl"), "one\n\nthree\n");
  EXPECT_EQ(read_complete_lines(path("m.jsonl")), (std::vector<std::string>{"one", "", "three"}));
  write_plain(path("m.jsonl"), "torn");
  EXPECT_TRUE(read_complete_lines(path("m.jsonl")).empty());
}

TEST_F(LineLogTest, TruncateTornTailRemovesOnlyTheTornLine) {
  write_plain(path("m.jsonl"), "one\ntwo\n{\"st");
  truncate_torn_tail(path("m.jsonl"));
  EXPECT_EQ(read_file(path("m.jsonl")), "one\ntwo\n");
  truncate_torn_tail(path("m.jsonl"));  // already clean: untouched
  EXPECT_EQ(read_file(path("m.jsonl")), "one\ntwo\n");
  write_plain(path("m.jsonl"), "only torn");
  truncate_torn_tail(path("m.jsonl"));
  EXPECT_EQ(read_file(path("m.jsonl")), "");
}

TEST_F(LineLogTest, AppendAfterTruncateTornTailStartsOnAFreshLine) {
  write_plain(path("m.jsonl"), "one\n{\"st");
  truncate_torn_tail(path("m.jsonl"));
  LineLog(path("m.jsonl")).write_line("two");
  EXPECT_EQ(read_complete_lines(path("m.jsonl")), (std::vector<std::string>{"one", "two"}));
}

// ---- FileLock -------------------------------------------------------------------------------

TEST_F(FsUtil, AFileLockIsExclusiveAndTheRefusedOneReadsTheHoldersRecord) {
  FileLock first = FileLock::try_lock(path("x.lock"));
  ASSERT_TRUE(first.held());
  EXPECT_EQ(first.previous_record(), "") << "a new lock file has no record";
  first.write_record("{\"pid\": 1}\n");
  // flock locks belong to an open file description: a second open in this process conflicts too.
  const FileLock second = FileLock::try_lock(path("x.lock"));
  EXPECT_FALSE(second.held());
  EXPECT_EQ(second.previous_record(), "{\"pid\": 1}\n");
}

TEST_F(FsUtil, AReleasedFileLockIsFreeAndARemovedOneLeavesNoFile) {
  {
    FileLock kept = FileLock::try_lock(path("x.lock"));
    ASSERT_TRUE(kept.held());
    kept.write_record("left behind");
  }  // destroyed: released, the file and its record stay (as after a crash)
  FileLock again = FileLock::try_lock(path("x.lock"));
  ASSERT_TRUE(again.held());
  EXPECT_EQ(again.previous_record(), "left behind");
  again.release_and_remove();
  EXPECT_FALSE(again.held());
  EXPECT_FALSE(fs::exists(path("x.lock")));
  EXPECT_TRUE(FileLock::try_lock(path("x.lock")).held());
}

TEST_F(FsUtil, AFileLockInAMissingDirectoryFailsNamingThePath) {
  try {
    (void)FileLock::try_lock(path("missing/x.lock"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path("missing/x.lock")), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sl
