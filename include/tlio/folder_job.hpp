// tlio/folder_job.hpp: a folder rewrite (convert, copy, quantize, dequantize) or a checkpoint
// import run as a job of units, each unit in any process on any machine that sees the output
// folder (a local or shared disk), then published once (docs/jobs.md).
//
// The steps, each a call of the same function with the same arguments and a FolderJob:
//  - plan: opens the source, decides the units (one per output shard) and records them in the
//    job's staging folder, `<dst>/.tlio-job-<id>`; says how many there are. Nothing else is
//    written; a plan of the same id starts the job over.
//  - unit k: writes output shard k (and what the commit needs to know of it) into the staging
//    folder, each file renamed in whole, so a unit retried after a failure overwrites its own
//    files. Units run in any order, at once or not.
//  - commit: checks every unit is done and its file whole, then publishes the set as the
//    single-process call would (the shards renamed in, the index made from them, config.json
//    edited, the tokenizer files carried) and removes the staging folder. Its report is the
//    single-process call's, and so is every byte of the folder.
//  - abort: removes the staging folder; the output folder stays as it was.
// A source that changed between the plan and a unit (its files' sizes), a unit or commit without
// a plan, and an output that is not local are refused by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tlio/export.hpp"

namespace tlio {

struct FolderJob {
  enum class Step { plan, unit, commit, abort };
  Step step = Step::plan;
  /// Names the staging folder `<dst>/.tlio-job-<id>`: 1 to 64 characters of [A-Za-z0-9_-].
  std::string id;
  /// Step::unit: the unit to run, 0 .. units-1.
  uint64_t unit = 0;
  /// Step::plan: set to the number of units when not null.
  uint64_t* units = nullptr;
};

/// The longest job id.
inline constexpr size_t kMaxJobIdLength = 64;

/// True for an id a job can have: 1 to kMaxJobIdLength of [A-Za-z0-9_-].
TLIO_API bool valid_job_id(std::string_view id) noexcept;

/// The step `step` ("plan", "commit", "abort" or a unit's number, as the CLI's --job-step takes
/// it) of job `id`; Error{invalid_argument} for a bad id or step.
TLIO_API FolderJob parse_job_step(std::string id, std::string_view step);

}  // namespace tlio
