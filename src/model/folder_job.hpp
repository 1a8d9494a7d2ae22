// model/folder_job.hpp: the staging folder of a job of units (tlio/folder_job.hpp), what a folder
// rewrite and a checkpoint import share: the plan recorded, each unit's files and its receipt,
// files adopted into the output set by the commit.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/location.hpp"
#include "tlio/folder_job.hpp"

namespace tlio::detail {

class JobFolder {
 public:
  /// The staging folder of `job` in the output folder `out`: Error{invalid_argument} for an id
  /// outside [A-Za-z0-9_-]{1,64} or an output that is not a local folder.
  JobFolder(const Location& out, const FolderJob& job);
  const FolderJob& job() const noexcept { return job_; }

  /// Step::plan: the staging folder made anew (a previous one of this id removed, the output
  /// folder created), `plan` (what the units will write, as text that changes when the
  /// source does) recorded with the number of units, which is returned through job.units.
  void begin(uint64_t units, std::string_view plan) const;
  /// Step::unit and Step::commit: Error when there is no plan, when `plan` is not the
  /// recorded one (the source changed) or, for a unit, when its number is past the units.
  /// Returns the number of units.
  uint64_t check(std::string_view plan) const;

  /// The staging folder.
  Location folder() const { return Location::local(dir_); }
  /// Where a unit writes its output file `name`.
  Location file(std::string_view name) const;
  /// What a unit leaves last: the name of the file it wrote ("" for none) and what it counted of
  /// the source shards it stands for (source shard, counts as one line of text).
  struct Receipt {
    std::string file;
    std::vector<std::pair<uint64_t, std::string>> counts;
  };
  void finish_unit(uint64_t unit, const Receipt& receipt) const;
  /// The commit's question: Error{io} saying the unit has not finished, or that its receipt is
  /// damaged.
  Receipt receipt(uint64_t unit) const;
  /// The commit: unit output `name` renamed to `dest` with the rest of `set`.
  void adopt(OutputSet& set, std::string_view name, const Location& dest) const;
  /// Removes the staging folder (commit, once published; abort).
  void remove() const;

 private:
  void put_text(std::string_view name, std::string_view text) const;

  FolderJob job_;
  std::filesystem::path dir_;
};

/// True for a job's abort step (`job` set), which removes the staging folder in `out` and is done:
/// the caller returns at once, without opening its source (which may be gone).
bool abort_if_asked(const Location& out, const FolderJob* job);

}  // namespace tlio::detail
