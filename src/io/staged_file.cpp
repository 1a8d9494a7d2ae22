// io/staged_file.cpp: the three kinds of staged output (io/staged_file.hpp).
#include "io/staged_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <utility>
#include <vector>

#include "io/interrupt.hpp"
#include "io/live_files.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// As the kernel's own limit on links followed in one lookup (MAXSYMLINKS).
constexpr int kMaxLinkHops = 40;
constexpr std::string_view kTempMarker = ".tlio-tmp-";

mode_t current_umask() {
  mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

std::string_view kind_of(mode_t mode) {
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// Refuses a destination (or what its links lead to) that is not a regular file.
[[noreturn]] void refuse_node(const std::filesystem::path& dest, const std::filesystem::path& at,
                              mode_t mode) {
  const std::string what =
      at == dest ? fmt::format("is {}, not a file", kind_of(mode))
                 : fmt::format("links to {}, which is {}, not a file", at.string(), kind_of(mode));
  if (S_ISDIR(mode)) throw_io(what, dest.string(), std::make_error_code(std::errc::is_a_directory));
  throw Error(ErrorCode::invalid_argument, Rule::none, {}, std::nullopt,
              what + "; tlio replaces only regular files", dest.string());
}

// starttime (field 22 of /proc/PID/stat, clock ticks after boot): with the pid, it names one
// process for the life of the machine. nullopt (errno set) when the file cannot be read.
std::optional<uint64_t> process_start(pid_t pid) {
  const std::string path = fmt::format("/proc/{}/stat", pid);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  const std::string_view text(buf, static_cast<size_t>(n));
  size_t at = text.rfind(')');  // the command name in parentheses may hold spaces
  if (at == std::string_view::npos) return std::nullopt;
  for (int field = 2; field < 22 && at != std::string_view::npos; ++field)
    at = text.find(' ', at + 1);
  if (at == std::string_view::npos) return std::nullopt;
  uint64_t start = 0;
  const auto [end, ec] = std::from_chars(text.data() + at + 1, text.data() + text.size(), start);
  if (ec != std::errc{}) return std::nullopt;
  return start;
}

struct ProcessId {
  pid_t pid;
  uint64_t start;  // 0 when /proc could not tell
};

ProcessId this_process() {
  // Not cached across fork(): the child is another process.
  const pid_t pid = ::getpid();
  return {pid, process_start(pid).value_or(0)};
}

// Gone: no process has the pid (kill says ESRCH; an EPERM answer means one lives, though
// /proc may hide it, as with hidepid), or the one that has it started at another time.
bool process_gone(const ProcessId& p) {
  if (::kill(p.pid, 0) != 0 && errno == ESRCH) return true;
  const auto start = process_start(p.pid);
  return start && p.start != 0 && *start != p.start;
}

// "<pid>-<start>-XXXXXX" after the marker; nullopt for any other name (an older tlio's
// temporaries, which say no process, are left alone).
std::optional<ProcessId> parse_owner(std::string_view rest) {
  ProcessId id{};
  const char* p = rest.data();
  const char* end = rest.data() + rest.size();
  auto r = std::from_chars(p, end, id.pid);
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != '-' || id.pid <= 0) return std::nullopt;
  r = std::from_chars(r.ptr + 1, end, id.start);
  if (r.ec != std::errc{} || r.ptr == end || *r.ptr != '-' || end - (r.ptr + 1) != 6)
    return std::nullopt;
  return id;
}

// Removes the temporaries that earlier writes to `target` left when their process died.
// `self` is this process: its own temporaries are never leftovers.
void remove_leftovers(const std::filesystem::path& dir, const std::string& target_name,
                      const ProcessId& self) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;  // creating the temporary will report what is wrong with the folder
  const std::string prefix = "." + target_name + std::string(kTempMarker);
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) continue;
    const auto owner = parse_owner(name.substr(prefix.size()));
    if (!owner || (owner->pid == self.pid && owner->start == self.start)) continue;
    if (!process_gone(*owner)) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      (void)::unlinkat(::dirfd(d), e->d_name, 0);
  }
  ::closedir(d);
}

// The folder a file is in ("." for a bare name).
std::filesystem::path folder_of(const std::filesystem::path& file) {
  std::filesystem::path dir = file.parent_path();
  return dir.empty() ? "." : dir;
}

// Makes a rename into `file`'s folder durable.
void fsync_folder_of(const std::filesystem::path& file, const std::string& name) {
  const int dfd = ::open(folder_of(file).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  const int rc = ::fsync(dfd);
  const int err = errno;
  ::close(dfd);
  if (rc != 0 && err != EINVAL) throw_errno("fsync of the directory failed", name, err);
}

// The mode a file replacing `target` gets: the replaced file's, else what the umask allows.
mode_t replacing_mode(const std::filesystem::path& target) {
  struct stat st;
  if (::stat(target.c_str(), &st) == 0) return st.st_mode & 07777;
  return 0666 & ~current_umask();
}

}  // namespace

std::filesystem::path output_target(const std::filesystem::path& dest) {
  std::filesystem::path at = dest;
  for (int hops = 0;; ++hops) {
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT && hops == 0) return at;  // a new file
      if (err == ENOENT)
        throw_errno(fmt::format("is a symbolic link to {}, which does not exist", at.string()),
                    dest.string(), err);
      throw_errno("cannot look at the output", dest.string(), err);
    }
    if (S_ISREG(st.st_mode)) return at;
    if (!S_ISLNK(st.st_mode)) refuse_node(dest, at, st.st_mode);
    if (hops == kMaxLinkHops)
      throw_errno(fmt::format("is a chain of more than {} symbolic links (a loop?)", kMaxLinkHops),
                  dest.string(), ELOOP);
    std::error_code ec;
    const std::filesystem::path link = std::filesystem::read_symlink(at, ec);
    if (ec) throw_io("cannot read the symbolic link", dest.string(), ec);
    at = link.is_absolute() ? link : at.parent_path() / link;
  }
}

namespace {

// A temporary beside the target, `.<name>.tlio-tmp-<pid>-<start>-XXXXXX`, renamed over it; or a
// complete file another process wrote beside it (a job's unit, model/folder_job.hpp), adopted:
// renamed in the same way, and left where it is when discarded (for the job's next commit).
class LocalStagedFile final : public StagedFile {
 public:
  struct Adopt {};
  LocalStagedFile(std::filesystem::path existing, const std::filesystem::path& dest, Adopt)
      : name_(dest.string()),
        target_(output_target(dest)),
        tmp_(std::move(existing)),
        fd_(open_read(tmp_)),
        adopted_(true) {}

  explicit LocalStagedFile(const std::filesystem::path& dest)
      : name_(dest.string()), target_(output_target(dest)) {
    const std::filesystem::path dir = folder_of(target_);
    const std::string target_name = target_.filename().string();
    const ProcessId self = this_process();
    remove_leftovers(dir, target_name, self);
    // Created and registered with the stop signals held, so a handler finds every temporary.
    const HeldStopSignals held;
    const std::string tmpl =
        (dir / fmt::format(".{}{}{}-{}-XXXXXX", target_name, kTempMarker, self.pid, self.start))
            .string();
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    const int fd = ::mkostemp(buf.data(), O_CLOEXEC);
    if (fd < 0) throw_errno("cannot create a temporary file in " + dir.string(), name_, errno);
    fd_ = Fd(fd);
    tmp_ = buf.data();
    live_ = LiveEntry::temporary(tmp_.native());
  }
  ~LocalStagedFile() override { discard(); }

  int fd() const noexcept override { return fd_.get(); }
  const std::string& name() const noexcept override { return name_; }
  bool lands_on_disk() const noexcept override { return true; }
  bool publishes_by_rename() const noexcept override { return true; }

  void prepare() override {
    if (done_) throw_io("file already committed or aborted", name_);
    if (prepared_) return;
    if (::fchmod(fd_.get(), replacing_mode(target_)) != 0)
      throw_errno("cannot set permissions", name_, errno);
    if (::fsync(fd_.get()) != 0) throw_errno("fsync failed", name_, errno);
    fd_ = Fd();
    prepared_ = true;
  }

  void publish() override {
    prepare();
    struct stat st;
    if (::lstat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      discard();  // something else took the target's name meanwhile: leave it be
      refuse_node(std::filesystem::path(name_), target_, st.st_mode);
    }
    if (::rename(tmp_.c_str(), target_.c_str()) != 0)
      throw_errno("cannot rename into place", name_, errno);
    done_ = true;
    live_.reset();
    fsync_folder_of(target_, name_);
  }

  void discard() noexcept override {
    if (done_) return;
    done_ = true;
    fd_ = Fd();
    if (!adopted_) ::unlink(tmp_.c_str());
    live_.reset();
  }

 private:
  std::string name_;
  std::filesystem::path target_;
  std::filesystem::path tmp_;
  Fd fd_;
  LiveEntry live_;
  bool prepared_ = false;
  bool done_ = false;
  bool adopted_ = false;
};

// An unnamed temporary (it vanishes with the process), sent somewhere whole on publish.
class SpooledFile : public StagedFile {
 public:
  explicit SpooledFile(std::string name) : name_(std::move(name)), fd_(unnamed_temp_file(name_)) {}
  int fd() const noexcept override { return fd_.get(); }
  const std::string& name() const noexcept override { return name_; }
  bool lands_on_disk() const noexcept override { return false; }
  bool publishes_by_rename() const noexcept override { return false; }
  void prepare() override {
    if (done_) throw_io("file already committed or aborted", name_);
  }
  void publish() override {
    if (done_) throw_io("file already committed or aborted", name_);
    send(fd_.get(), fd_size(fd_.get(), name_));
    done_ = true;
    fd_ = Fd();
  }
  void discard() noexcept override {
    done_ = true;
    fd_ = Fd();
  }

 protected:
  virtual void send(int fd, uint64_t size) = 0;

 private:
  std::string name_;
  Fd fd_;
  bool done_ = false;
};

class UploadedFile final : public SpooledFile {
 public:
  UploadedFile(std::string name, UploadFunction upload)
      : SpooledFile(std::move(name)), upload_(std::move(upload)) {}

 private:
  void send(int fd, uint64_t size) override {
    const LiveUpload live;  // a signal handler asks it to stop (tlio::stop_uploads)
    upload_(fd, size, upload_stop_check());
  }
  UploadFunction upload_;
};

class StreamedFile final : public SpooledFile {
 public:
  StreamedFile(int out_fd, std::string name) : SpooledFile(std::move(name)), out_fd_(out_fd) {}
  void prepare() override { throw_invalid(name() + " cannot be one file of a set"); }

 private:
  void send(int fd, uint64_t size) override { copy_to_stream(fd, size, out_fd_, name()); }
  int out_fd_;
};

}  // namespace

std::unique_ptr<StagedFile> stage_local_file(const std::filesystem::path& dest) {
  return std::make_unique<LocalStagedFile>(dest);
}

std::unique_ptr<StagedFile> adopt_local_file(const std::filesystem::path& staged,
                                             const std::filesystem::path& dest) {
  return std::make_unique<LocalStagedFile>(staged, dest, LocalStagedFile::Adopt{});
}

std::unique_ptr<StagedFile> stage_upload(std::string name, UploadFunction upload) {
  return std::make_unique<UploadedFile>(std::move(name), std::move(upload));
}

std::unique_ptr<StagedFile> stage_stream(int out_fd, std::string name) {
  return std::make_unique<StreamedFile>(out_fd, std::move(name));
}

}  // namespace tlio::detail
