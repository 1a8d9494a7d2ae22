// model/folder_job.cpp: a job's staging folder, `<dst>/.tlio-job-<id>`: `plan` (the number of
// units, then what they will write), each unit's output file and `unit-<k>.done` (its file's name
// and its counts), written last. Every file is renamed in whole, so a unit retried, or two runs
// of one unit, leave one complete copy. The commit renames the folder aside before it reads it.
#include "model/folder_job.hpp"

#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <system_error>

#include "common/json_text.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio {

bool valid_job_id(std::string_view id) noexcept {
  return !id.empty() && id.size() <= kMaxJobIdLength &&
         std::all_of(id.begin(), id.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
         });
}

FolderJob parse_job_step(std::string id, std::string_view step) {
  if (!valid_job_id(id))
    throw_invalid(fmt::format("job id {} is not 1 to {} of the characters A-Z a-z 0-9 - _",
                              detail::quote_name(id), kMaxJobIdLength));
  FolderJob job;
  job.id = std::move(id);
  if (step == "plan") {
    job.step = FolderJob::Step::plan;
  } else if (step == "commit") {
    job.step = FolderJob::Step::commit;
  } else if (step == "abort") {
    job.step = FolderJob::Step::abort;
  } else {
    job.step = FolderJob::Step::unit;
    const auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), job.unit);
    if (step.empty() || ec != std::errc{} || end != step.data() + step.size())
      throw_invalid(fmt::format("a job's step is plan, commit, abort or a unit's number, not {}",
                                detail::quote_name(step)));
  }
  return job;
}

}  // namespace tlio

namespace tlio::detail {
namespace {

constexpr std::string_view kPlanFile = "plan";

bool is_folder(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::symlink_status(p, ec).type() == std::filesystem::file_type::directory;
}

bool present(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(p, ec));
}

// Removes a folder the job made; a link or file in its place is refused, left alone.
void remove_folder(const std::filesystem::path& dir) {
  if (!present(dir)) return;
  if (!is_folder(dir)) throw_invalid(dir.string() + " is not a folder a job made; left alone");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // links inside are removed, never followed
  if (ec) throw_io("cannot remove the job's folder", dir.string(), ec);
}

}  // namespace

JobFolder::JobFolder(const Location& out, const FolderJob& job) : job_(job) {
  if (!valid_job_id(job.id)) parse_job_step(job.id, "plan");  // throws, saying why
  if (!out.is_local())
    throw_invalid(out.display() +
                  ": a job's output is a local or shared folder (its units meet there)");
  staging_ = out.path() / (".tlio-job-" + job.id);
  claimed_ = out.path() / (".tlio-job-" + job.id + ".committing");
  dir_ = staging_;
  job_.units = nullptr;
}

JobFolder::~JobFolder() {
  if (dir_ == claimed_ && !finished_) (void)std::rename(claimed_.c_str(), staging_.c_str());
}

void JobFolder::begin(uint64_t units, std::string_view plan) const {
  std::error_code ec;
  std::filesystem::create_directories(staging_.parent_path(), ec);
  if (ec) throw_io("cannot create the output folder", staging_.parent_path().string(), ec);
  remove();
  if (!std::filesystem::create_directory(staging_, ec) || ec)
    throw_io("cannot create the job's folder", staging_.string(), ec);
  put_text(kPlanFile, fmt::format("{}\n{}", units, plan));
}

uint64_t JobFolder::check(std::string_view plan) const {
  if (!is_folder(dir_) || !present(dir_ / kPlanFile))
    throw_io(fmt::format("job {} has no plan here (its plan step runs first; or its commit is "
                         "under way, or died: abort and plan again)",
                         job_.id),
             dir_.string(), std::make_error_code(std::errc::no_such_file_or_directory));
  const std::string text = read_text_file(regular(kPlanFile));
  const size_t eol = text.find('\n');
  uint64_t units = 0;
  const bool ok = eol != std::string::npos &&
                  std::from_chars(text.data(), text.data() + eol, units).ptr == text.data() + eol &&
                  eol > 0;
  if (!ok) throw_io(fmt::format("job {}'s plan is damaged", job_.id), (dir_ / kPlanFile).string());
  if (std::string_view(text).substr(eol + 1) != plan)
    throw_invalid(fmt::format(
        "the source is not what job {} planned (its files changed since); plan the job again",
        job_.id));
  if (job_.step == FolderJob::Step::unit && job_.unit >= units)
    throw_invalid(fmt::format("job {} has {} units, no unit {}", job_.id, units, job_.unit));
  return units;
}

std::filesystem::path JobFolder::regular(std::string_view name) const {
  const std::filesystem::path p = dir_ / name;
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) throw_errno("cannot look at a job's file", p.string(), errno);
  if (!S_ISREG(st.st_mode))
    throw_invalid(p.string() + " is not a file a job wrote (a link, a folder or a device)");
  return p;
}

Location JobFolder::output(std::string_view name) const {
  const std::filesystem::path p = dir_ / name;
  struct stat st;
  if (::lstat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && ::unlink(p.c_str()) != 0)
    throw_errno("cannot clear the name of a unit's file", p.string(), errno);
  return Location::local(p);
}

void JobFolder::put_text(std::string_view name, std::string_view text) const {
  OutputSet set;
  set.add_text(output(name), text);
  set.commit();
}

// A receipt's text: the file's name on the first line, then "<source> <counts>" lines.
void JobFolder::finish_unit(uint64_t unit, const Receipt& receipt) const {
  std::string text = receipt.file + "\n";
  for (const auto& [source, counts] : receipt.counts)
    text += fmt::format("{} {}\n", source, counts);
  put_text(fmt::format("unit-{}.done", unit), text);
}

void JobFolder::claim() {
  if (::rename(staging_.c_str(), claimed_.c_str()) != 0)
    throw_errno(fmt::format("job {} cannot be committed: no plan here, or another commit has it "
                            "(one that died leaves {}: abort and plan again)",
                            job_.id, claimed_.filename().string()),
                staging_.string(), errno);
  dir_ = claimed_;
}

JobFolder::Receipt JobFolder::receipt(uint64_t unit) const {
  const std::string name = fmt::format("unit-{}.done", unit);
  if (!present(dir_ / name))
    throw_io(
        fmt::format("unit {} of job {} has not finished; nothing was published", unit, job_.id),
        dir_.string(), std::make_error_code(std::errc::no_such_file_or_directory));
  const std::string text = read_text_file(regular(name));
  const char* const end = text.data() + text.size();
  Receipt r;
  const char* at = std::find(text.data(), end, '\n');
  bool ok = at != end;
  if (ok) r.file.assign(text.data(), at);
  while (ok && at + 1 < end) {
    const char* line = at + 1;
    at = std::find(line, end, '\n');
    uint64_t source = 0;
    const auto [space, ec] = std::from_chars(line, at, source);
    ok = at != end && ec == std::errc{} && space < at && *space == ' ';
    if (ok) r.counts.emplace_back(source, std::string(space + 1, at));
  }
  if (!ok) throw_io(fmt::format("the receipt of unit {} is damaged", unit), (dir_ / name).string());
  return r;
}

File JobFolder::open_unit_output(uint64_t unit, std::string_view written,
                                 std::string_view expected) const {
  if (written != expected)
    throw_io(fmt::format("unit {} of job {} says it wrote {}, not {}", unit, job_.id,
                         quote_name(written), expected),
             dir_.string());
  return File::open(regular(expected));
}

void JobFolder::adopt(OutputSet& set, std::string_view name, const Location& dest) const {
  set.add_adopted(regular(name), dest);
}

void JobFolder::finish() noexcept {
  finished_ = true;
  std::error_code ec;
  if (is_folder(claimed_)) std::filesystem::remove_all(claimed_, ec);
}

void JobFolder::remove() const {
  remove_folder(staging_);
  remove_folder(claimed_);
}

bool abort_if_asked(const Location& out, const FolderJob* job) {
  if (!job || job->step != FolderJob::Step::abort) return false;
  JobFolder(out, *job).remove();
  return true;
}

}  // namespace tlio::detail
