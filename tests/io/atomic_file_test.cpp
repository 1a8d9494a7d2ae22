// Tests for io/atomic_file.hpp and io/live_files.hpp: what an output may be, links, leftovers of
// dead processes, sets of files, and the registry a signal handler reads.
#include "io/atomic_file.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "io/live_files.hpp"
#include "test_util.hpp"
#include "tlio/error.hpp"
#include "tlio/interrupt.hpp"

namespace tlio::detail {
namespace {

std::vector<std::string> entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

std::string text_of(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write(const std::filesystem::path& dest, std::string_view text) {
  AtomicFile f(dest);
  pwrite_all(f.fd(), 0, std::as_bytes(std::span(text)), dest.string());
  f.commit();
}

// The error a write to `dest` gets; fails the test if it is accepted.
Error refusal(const std::filesystem::path& dest) {
  try {
    AtomicFile f(dest);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << dest << " was accepted as an output";
  return Error(ErrorCode::io, Rule::none, {}, std::nullopt, "");
}

TEST(AtomicFile, TemporaryIsHiddenNamesItsProcessAndIsRemovedOnAbort) {
  test::TempDir dir;
  {
    AtomicFile f(dir / "x.bin");
    const auto names = entries(dir.path());
    ASSERT_EQ(names.size(), 1u);
    const std::string prefix = ".x.bin.tlio-tmp-" + std::to_string(::getpid()) + "-";
    EXPECT_EQ(names[0].rfind(prefix, 0), 0u) << names[0];
    EXPECT_TRUE(is_live_temporary((dir / names[0]).string()));
  }
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(AtomicFile, CommitPublishesAndKeepsTheMode) {
  test::TempDir dir;
  write(dir / "x.bin", "old");
  ASSERT_EQ(::chmod((dir / "x.bin").c_str(), 0640), 0);
  AtomicFile f(dir / "x.bin");
  const std::byte b[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
  pwrite_all(f.fd(), 0, b, "x");
  f.commit();
  EXPECT_EQ(test::read_bytes(dir / "x.bin").size(), 3u);
  struct stat st;
  ASSERT_EQ(::stat((dir / "x.bin").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_THROW(f.commit(), Error);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"x.bin"});
}

TEST(AtomicFile, MissingDirectoryIsIoError) {
  test::TempDir dir;
  const Error e = refusal(dir / "no" / "x.bin");
  EXPECT_EQ(e.code(), ErrorCode::io);
}

TEST(AtomicFile, RefusesFifoSocketAndDirectoryUntouched) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  Error e = refusal(dir / "fifo");  // never opened: a FIFO would block here
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("fifo: is a FIFO, not a file"), std::string::npos)
      << e.what();

  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock = (dir / "sock").string();
  ASSERT_LT(sock.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock.c_str(), sock.size() + 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  e = refusal(dir / "sock");
  ::close(s);
  EXPECT_NE(std::string(e.what()).find("is a socket, not a file"), std::string::npos) << e.what();

  std::filesystem::create_directory(dir / "sub");
  e = refusal(dir / "sub");
  EXPECT_EQ(e.code(), ErrorCode::io);
  EXPECT_EQ(e.os_error(), std::make_error_code(std::errc::is_a_directory));
  EXPECT_NE(std::string(e.what()).find("is a directory, not a file"), std::string::npos)
      << e.what();

  struct stat st;
  ASSERT_EQ(::lstat((dir / "fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"fifo", "sock", "sub"}));
}

TEST(AtomicFile, RefusesDevicesMadeForTheTest) {
  test::TempDir dir;
  // The same numbers as /dev/full and /dev/loop0, made here: no system node is touched.
  if (::mknod((dir / "chr").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0 ||
      ::mknod((dir / "blk").c_str(), S_IFBLK | 0600, makedev(7, 0)) != 0)
    GTEST_SKIP() << "mknod needs root here (" << std::strerror(errno) << ")";
  Error e = refusal(dir / "chr");
  EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("chr: is a character device, not a file"), std::string::npos)
      << e.what();
  e = refusal(dir / "blk");
  EXPECT_NE(std::string(e.what()).find("is a block device, not a file"), std::string::npos)
      << e.what();
  // Through a link too, naming both.
  std::filesystem::create_symlink("chr", dir / "to-chr");
  e = refusal(dir / "to-chr");
  EXPECT_NE(std::string(e.what()).find("links to"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("which is a character device"), std::string::npos)
      << e.what();
  struct stat st;
  ASSERT_EQ(::lstat((dir / "chr").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"blk", "chr", "to-chr"}));
}

TEST(AtomicFile, FollowsLinksAndReplacesTheTargetInItsOwnFolder) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "blobs");
  std::filesystem::create_directories(dir / "snap");
  write(dir / "blobs" / "abc", "old");
  std::filesystem::create_symlink("../blobs/abc", dir / "snap" / "model.safetensors");  // relative
  std::filesystem::create_symlink(dir / "snap" / "model.safetensors", dir / "outer");   // absolute
  write(dir / "outer", "new");
  EXPECT_EQ(text_of(dir / "blobs" / "abc"), "new");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "snap" / "model.safetensors"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "outer"));
  EXPECT_EQ(output_target(dir / "outer"), dir / "snap" / "../blobs/abc");
  EXPECT_EQ(entries(dir / "blobs"), std::vector<std::string>{"abc"});
}

TEST(AtomicFile, DanglingAndLoopingLinksAreErrors) {
  test::TempDir dir;
  std::filesystem::create_symlink("nowhere", dir / "dangling");
  Error e = refusal(dir / "dangling");
  EXPECT_EQ(e.os_error(), std::make_error_code(std::errc::no_such_file_or_directory));
  EXPECT_NE(std::string(e.what()).find("dangling: is a symbolic link to"), std::string::npos)
      << e.what();
  std::filesystem::create_symlink("b", dir / "a");
  std::filesystem::create_symlink("a", dir / "b");
  e = refusal(dir / "a");
  EXPECT_EQ(e.os_error(), std::make_error_code(std::errc::too_many_symbolic_link_levels));
  EXPECT_FALSE(std::filesystem::exists(dir / "nowhere"));
}

TEST(AtomicFile, ANodeThatAppearsBeforeCommitIsLeftAlone) {
  test::TempDir dir;
  AtomicFile f(dir / "out");
  ASSERT_EQ(::mkfifo((dir / "out").c_str(), 0644), 0);
  EXPECT_THROW(f.commit(), Error);
  struct stat st;
  ASSERT_EQ(::lstat((dir / "out").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out"});
}

// A child that makes a temporary for `dest` and then dies without cleaning up (as kill -9 or a
// power cut would leave it); returns the leftover's name.
std::string leave_leftover(const std::filesystem::path& dest) {
  const pid_t pid = fork();
  if (pid == 0) {
    AtomicFile* f = new AtomicFile(dest);  // never destroyed
    (void)f;
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  for (const std::string& n : entries(dest.parent_path()))
    if (n.find("-" + std::to_string(pid) + "-") != std::string::npos) return n;
  ADD_FAILURE() << "the child left no temporary";
  return {};
}

TEST(AtomicFile, NextWriteRemovesLeftoversOfDeadProcessesOnly) {
  test::TempDir dir;
  // A live writer's temporary (a child that waits), leftovers, and files that merely look alike.
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t live = fork();
  if (live == 0) {
    AtomicFile f(dir / "m.safetensors");
    char c;
    (void)::write(ready[1], "r", 1);
    (void)::read(done[0], &c, 1);  // until the parent is done
    _exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  const std::string dead = leave_leftover(dir / "m.safetensors");
  const std::string other_dest = leave_leftover(dir / "other.safetensors");
  write(dir / ".m.safetensors.tlio-tmp-Ab12Cd", "an older tlio's temporary: says no process");
  write(dir / ".m.safetensors.tlio-tmp-999999999-1-Ab12Cd", "pid out of range: never a process");
  write(dir / "notes.txt", "x");
  const size_t before = entries(dir.path()).size();

  write(dir / "m.safetensors", "new");

  const auto after = entries(dir.path());
  EXPECT_EQ(std::count(after.begin(), after.end(), dead), 0) << dead;
  EXPECT_EQ(std::count(after.begin(), after.end(), other_dest), 1);  // another destination's
  EXPECT_EQ(std::count(after.begin(), after.end(), ".m.safetensors.tlio-tmp-Ab12Cd"), 1);
  EXPECT_EQ(std::count(after.begin(), after.end(), "notes.txt"), 1);
  size_t live_left = 0;
  for (const auto& n : after)
    if (n.find("-" + std::to_string(live) + "-") != std::string::npos) ++live_left;
  EXPECT_EQ(live_left, 1u);  // its process is still running
  EXPECT_EQ(after.size(),
            before + 1 - 2);  // m.safetensors added; the dead one and the 999999999 one gone
  ASSERT_EQ(::write(done[1], "x", 1), 1);
  int status = 0;
  waitpid(live, &status, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
}

TEST(OutputSet, PublishesAllOrNothing) {
  test::TempDir dir;
  write(dir / "a", "old a");
  {
    OutputSet set;
    set.add_text(Location::local(dir / "a"), "new a");
    set.add_text(Location::local(dir / "b"), "new b");
    // Destroyed before commit: both temporaries go, the old files stay.
  }
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"a"});
  EXPECT_EQ(text_of(dir / "a"), "old a");
  OutputSet set;
  set.add_text(Location::local(dir / "a"), "new a");
  set.add_text(Location::local(dir / "b"), "new b");
  write(dir / "src", "copied");
  set.add_copy(dir / "src", Location::local(dir / "c"));
  set.commit();
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"a", "b", "c", "src"}));
  EXPECT_EQ(text_of(dir / "b"), "new b");
  EXPECT_EQ(text_of(dir / "c"), "copied");
}

TEST(LiveFiles, SignalHandlerViewOfTemporariesAndMappings) {
  test::TempDir dir;
  AtomicFile a(dir / "a"), b(dir / "b");
  ASSERT_EQ(entries(dir.path()).size(), 2u);
  remove_temporary_files();  // what a signal handler calls
  EXPECT_TRUE(entries(dir.path()).empty());
  a.abort();
  b.abort();

  write(dir / "mapped", std::string(10000, 'x'));
  const Fd fd = open_read(dir / "mapped");
  const Mapping m(fd.get(), 10000, "mapped-name");
  char name[64];
  EXPECT_TRUE(mapped_file_name(m.bytes().data() + 9999, name, sizeof name));
  EXPECT_STREQ(name, "mapped-name");
  EXPECT_TRUE(mapped_file_name(m.bytes().data(), name, 4));
  EXPECT_STREQ(name, "map");  // cut to the buffer
  EXPECT_FALSE(mapped_file_name(m.bytes().data() + 10000, name, sizeof name));
  EXPECT_FALSE(mapped_file_name(&name, name, sizeof name));
}

TEST(LiveFiles, ManyEntriesAndReuse) {
  std::vector<LiveEntry> held;
  for (int i = 0; i < 300; ++i)
    held.push_back(LiveEntry::temporary("/nonexistent/t" + std::to_string(i)));
  EXPECT_TRUE(is_live_temporary("/nonexistent/t0"));
  EXPECT_TRUE(is_live_temporary("/nonexistent/t299"));
  held.erase(held.begin());
  EXPECT_FALSE(is_live_temporary("/nonexistent/t0"));
  held.push_back(LiveEntry::temporary("/nonexistent/again"));
  EXPECT_TRUE(is_live_temporary("/nonexistent/again"));
  EXPECT_FALSE(is_live_temporary(std::string(5000, 'x')));  // too long to register
  const LiveEntry too_long = LiveEntry::temporary(std::string(5000, 'x'));
  EXPECT_FALSE(is_live_temporary(std::string(5000, 'x')));
}

bool stop_after_polls(void* context) {
  int& left = *static_cast<int*>(context);
  return --left < 0;
}

TEST(Interrupt, ALongWriteStopsAndLeavesNothing) {
  test::TempDir dir;
  write(dir / "out", "old");
  std::vector<std::byte> chunk(size_t{1} << 20, std::byte{1});
  int polls = 3;
  try {
    const InterruptScope scope(stop_after_polls, &polls);
    AtomicFile f(dir / "out");
    for (uint64_t off = 0; off < (uint64_t{64} << 20); off += chunk.size())
      pwrite_all(f.fd(), off, chunk, "out");
    f.commit();
    ADD_FAILURE() << "not interrupted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::interrupted);
  }
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out"});
  EXPECT_EQ(text_of(dir / "out"), "old");
  // Outside the scope nothing asks: the same write completes.
  write(dir / "out", "new");
  EXPECT_EQ(text_of(dir / "out"), "new");
}

}  // namespace
}  // namespace tlio::detail
