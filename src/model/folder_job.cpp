// model/folder_job.cpp: a job's staging folder, `<dst>/.tlio-job-<id>`: `plan` (the number of
// units, then what they will write), each unit's output files and `unit-<k>.done` (the name of
// its file), written last, and the counts the commit adds up. Every file is renamed in whole, so
// a unit retried, or two runs of one unit, leave one complete copy.
#include "model/folder_job.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

#include "common/json_text.hpp"
#include "io/os_file.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

constexpr std::string_view kPlanFile = "plan";

bool valid_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxJobIdLength) return false;
  for (const char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) return false;
  return true;
}

bool is_folder(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::symlink_status(p, ec).type() == std::filesystem::file_type::directory;
}

}  // namespace

JobFolder::JobFolder(const Location& out, const FolderJob& job) : job_(job) {
  if (!valid_id(job.id))
    throw_invalid(fmt::format("job id {} is not 1 to {} of the characters A-Z a-z 0-9 - _",
                              quote_name(job.id), kMaxJobIdLength));
  if (!out.is_local())
    throw_invalid(out.display() +
                  ": a job's output is a local or shared folder (its units meet there)");
  dir_ = out.path() / (".tlio-job-" + job.id);
  job_.units = nullptr;
}

void JobFolder::begin(uint64_t units, std::string_view plan) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_.parent_path(), ec);
  if (ec) throw_io("cannot create the output folder", dir_.parent_path().string(), ec);
  remove();
  if (!std::filesystem::create_directory(dir_, ec) || ec)
    throw_io("cannot create the job's folder", dir_.string(), ec);
  put_text(kPlanFile, fmt::format("{}\n{}", units, plan));
}

uint64_t JobFolder::check(std::string_view plan) const {
  if (!std::filesystem::exists(dir_ / kPlanFile))
    throw_io(fmt::format("job {} has no plan here (its plan step runs first)", job_.id),
             dir_.string(), std::make_error_code(std::errc::no_such_file_or_directory));
  const std::string text = read_text_file(dir_ / kPlanFile);
  const size_t eol = text.find('\n');
  uint64_t units = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.find('\n'), units);
  if (eol == std::string::npos || ec != std::errc{} || end != text.data() + eol)
    throw_io(fmt::format("job {}'s plan is damaged", job_.id), (dir_ / kPlanFile).string());
  if (std::string_view(text).substr(eol + 1) != plan)
    throw_invalid(fmt::format(
        "the source is not what job {} planned (its files changed since); plan the job again",
        job_.id));
  if (job_.step == FolderJob::Step::unit && job_.unit >= units)
    throw_invalid(fmt::format("job {} has {} units, no unit {}", job_.id, units, job_.unit));
  return units;
}

Location JobFolder::file(std::string_view name) const { return Location::local(dir_ / name); }

void JobFolder::put_text(std::string_view name, std::string_view text) const {
  OutputSet set;
  set.add_text(file(name), text);
  set.commit();
}

// A receipt's text: the file's name on the first line, then "<source> <counts>" lines.
void JobFolder::finish_unit(uint64_t unit, const Receipt& receipt) const {
  std::string text = receipt.file + "\n";
  for (const auto& [source, counts] : receipt.counts)
    text += fmt::format("{} {}\n", source, counts);
  put_text(fmt::format("unit-{}.done", unit), text);
}

JobFolder::Receipt JobFolder::receipt(uint64_t unit) const {
  const std::filesystem::path done = dir_ / fmt::format("unit-{}.done", unit);
  if (!std::filesystem::exists(done))
    throw_io(
        fmt::format("unit {} of job {} has not finished; nothing was published", unit, job_.id),
        dir_.string(), std::make_error_code(std::errc::no_such_file_or_directory));
  const std::string text = read_text_file(done);
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
  if (!ok) throw_io(fmt::format("the receipt of unit {} is damaged", unit), done.string());
  return r;
}

void JobFolder::adopt(OutputSet& set, std::string_view name, const Location& dest) const {
  set.add_adopted(dir_ / name, dest);
}

void JobFolder::remove() const {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(dir_, ec))) return;
  if (!is_folder(dir_)) throw_invalid(dir_.string() + " is not a folder a job made; left alone");
  std::filesystem::remove_all(dir_, ec);
  if (ec) throw_io("cannot remove the job's folder", dir_.string(), ec);
}

bool abort_if_asked(const Location& out, const FolderJob* job) {
  if (!job || job->step != FolderJob::Step::abort) return false;
  JobFolder(out, *job).remove();
  return true;
}

}  // namespace tlio::detail
