// model/folder_job.hpp: the staging folder of a job of units (tlio/folder_job.hpp), what a folder
// rewrite and a checkpoint import share: the plan recorded, each unit's files and its receipt,
// and the commit, which takes the folder aside for itself and adopts the files into its set.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/atomic_file.hpp"
#include "io/location.hpp"
#include "tlio/file.hpp"
#include "tlio/folder_job.hpp"

namespace tlio::detail {

class JobFolder {
 public:
  /// The staging folder of `job` in the output folder `out`: Error{invalid_argument} for a bad
  /// id (valid_job_id) or an output that is not a local folder.
  JobFolder(const Location& out, const FolderJob& job);
  JobFolder(const JobFolder&) = delete;
  /// A claimed folder not finished (the commit failed) is given back for the next commit.
  ~JobFolder();
  const FolderJob& job() const noexcept { return job_; }

  /// Step::plan: the staging folder made anew (a previous one of this id removed, the output
  /// folder created), `plan` (what the units will write, as text that changes when the
  /// source does) recorded with the number of units.
  void begin(uint64_t units, std::string_view plan) const;
  /// Step::unit and Step::commit: Error when there is no plan, when `plan` is not the
  /// recorded one (the source changed) or, for a unit, when its number is past the units.
  /// Returns the number of units.
  uint64_t check(std::string_view plan) const;

  /// The staging folder, for messages.
  Location folder() const { return Location::local(dir_); }
  /// Where a unit writes its output file `name`: whatever else holds the name there (a link
  /// someone left) is removed first, so that the write lands in the folder itself.
  Location output(std::string_view name) const;
  /// What a unit leaves last: the name of the file it wrote ("" for none) and what it counted of
  /// the source shards it stands for (source shard, counts as one line of text).
  struct Receipt {
    std::string file;
    std::vector<std::pair<uint64_t, std::string>> counts;
  };
  void finish_unit(uint64_t unit, const Receipt& receipt) const;

  /// The commit: takes the staging folder aside (renamed to `.tlio-job-<id>.committing`) so
  /// that no unit, abort or other commit changes it while the set is made and published.
  void claim();
  /// Error{io} saying the unit has not finished, or that its receipt is damaged.
  Receipt receipt(uint64_t unit) const;
  /// Unit `unit`'s output file, opened: Error{io} unless its receipt names `expected` (`written`,
  /// as read from the receipt) and it is a regular file of the folder (not a link), whole.
  File open_unit_output(uint64_t unit, std::string_view written, std::string_view expected) const;
  /// Unit output `name` renamed to `dest` with the rest of `set`.
  void adopt(OutputSet& set, std::string_view name, const Location& dest) const;
  /// Once the set is published: the claimed folder removed (what cannot be is left; the
  /// folder is published, which is what counts).
  void finish() noexcept;

  /// Removes the staging folder and a claimed one (abort; a new plan).
  void remove() const;

 private:
  void put_text(std::string_view name, std::string_view text) const;
  // The file `name` of the folder, refused unless it is a regular file (not a link or a FIFO).
  std::filesystem::path regular(std::string_view name) const;

  FolderJob job_;
  std::filesystem::path staging_;  // .tlio-job-<id>
  std::filesystem::path claimed_;  // .tlio-job-<id>.committing
  std::filesystem::path dir_;      // the one in use: staging_, or claimed_ once claimed
  bool finished_ = false;
};

/// True for a job's abort step (`job` set), which removes the staging folder in `out` and is done:
/// the caller returns at once, without opening its source (which may be gone).
bool abort_if_asked(const Location& out, const FolderJob* job);

}  // namespace tlio::detail
