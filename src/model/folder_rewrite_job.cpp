// model/folder_rewrite_job.cpp: a folder rewrite run as a job of units (tlio/folder_job.hpp), a
// unit per output shard: the source's shards, or the re-sharded plan's (a unit runs the source
// shards its output draws from, their other tensors sent to a sink). Each unit writes its file
// and the counts of the source shards it stands for into the staging folder; the commit adopts
// the files into one set and finishes it as the single-process rewrite does.
#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "format/writer_access.hpp"
#include "model/folder_job.hpp"
#include "model/folder_rewrite.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {
namespace {

// What the units will write, as text that changes when the source does: the shard size asked
// for, each source shard's name, tensor count and data size.
std::string plan_text(const FolderSource& src, const FolderRewrite& how) {
  std::string text = fmt::format("max_shard_size {}\n", how.max_shard_size);
  for (size_t i = 0; i < src.weights.files.size(); ++i)
    text += fmt::format("{} {} {}\n", src.weights.names[i], src.weights.files[i].tensors().size(),
                        src.weights.files[i].header().data_size());
  return text;
}

// The source shards each unit runs, and the unit whose counts stand for each source shard (the
// first that runs it). A source shard no output draws from (all its tensors left out) runs in
// the last unit that begins at or before it (unit 0 when none does), so that what it counted is
// not lost.
struct UnitSources {
  std::vector<std::vector<size_t>> runs;  // per unit, in source order
  std::vector<size_t> owner;              // per source shard
};

UnitSources unit_sources(const std::vector<PlannedShard>& plan, size_t sources) {
  UnitSources u;
  u.runs.resize(plan.size());
  u.owner.assign(sources, SIZE_MAX);
  for (size_t k = 0; k < plan.size(); ++k)
    for (size_t i = plan[k].first_source; i <= plan[k].last_source && i < sources; ++i) {
      u.runs[k].push_back(i);
      if (u.owner[i] == SIZE_MAX) u.owner[i] = k;
    }
  for (size_t i = 0; i < sources; ++i) {
    if (u.owner[i] != SIZE_MAX) continue;
    size_t k = 0;
    for (size_t j = 0; j < plan.size(); ++j)
      if (plan[j].first_source <= i) k = j;
    u.owner[i] = k;
    u.runs[k].insert(std::upper_bound(u.runs[k].begin(), u.runs[k].end(), i), i);
  }
  return u;
}

ProgressCallback unit_progress(const FolderRewrite& how) {
  return [&how](uint64_t done, uint64_t total) {
    if (how.progress) how.progress(done, total);
  };
}

// Unit k of a re-sharded folder: output shard k, from the source shards it draws from.
void run_resharded_unit(const FolderSource& src, const FolderRewrite& how, const JobFolder& jf,
                        OutputSet& staged) {
  const size_t k = jf.job().unit;
  const Resharding r = plan_resharding(src, how);
  if (r.shards.size() <= k)
    throw_invalid(
        fmt::format("this call's options make {} shards, no unit {} (were the plan's "
                    "options other ones?)",
                    r.shards.size(), k));
  const PlannedShard& mine = r.shards[k];
  Writer out = WriterAccess::into_set(staged, jf.output(mine.name), kModelMetadata);
  out.set_metadata(mine.metadata);
  std::unordered_set<std::string_view> own;
  for (const TensorInfo* t : mine.tensors) {
    out.declare(t->name, t->dtype, t->shape);
    own.insert(t->name);
  }
  const UnitSources u = unit_sources(r.shards, src.weights.files.size());
  JobFolder::Receipt receipt{mine.name, {}};
  for (const size_t i : u.runs[k]) {
    Writer sink = WriterAccess::sink();
    std::unordered_map<std::string, Writer*> routes;
    for (const TensorInfo& t : r.declared[i]) {
      Writer* to = &out;
      if (!own.contains(t.name)) {
        sink.declare(t.name, t.dtype, t.shape);
        to = &sink;
      }
      routes.emplace(t.name, to);
    }
    Writer w = routes.empty() ? Writer::to_memory() : WriterAccess::routing(std::move(routes));
    if (how.restart) how.restart();
    how.write_shard(i, w, unit_progress(how));
    w.commit();
    if (u.owner[i] == k) receipt.counts.emplace_back(i, how.save_counts());
  }
  out.commit();
  staged.commit();
  jf.finish_unit(k, receipt);
}

void run_unit(const FolderSource& src, const FolderRewrite& how, const JobFolder& jf) {
  OutputSet staged;
  if (how.max_shard_size > 0) return run_resharded_unit(src, how, jf, staged);
  const size_t k = jf.job().unit;
  const std::string& name = src.weights.names[k];
  Writer w = WriterAccess::into_set(staged, jf.output(name), kModelMetadata);
  how.write_shard(k, w, unit_progress(how));
  // As the single-process rewrite: a shard left with no tensor is not written, unless it is the
  // folder's only file.
  const bool written = !w.layout().empty() || src.weights.files.size() == 1;
  if (written) {
    w.commit();
    staged.commit();
  }
  jf.finish_unit(k, {written ? name : "", {{k, how.save_counts()}}});
}

// The unit's file, checked to be the one the plan says, whole (File::open checks its size) and
// holding what the source's steps declare for it under this call's options (a unit run with
// other options is refused): its tensors' names, dtypes and shapes, and its metadata.
File open_unit_file(const JobFolder& jf, uint64_t unit, const std::string& written,
                    const std::string& expected, std::vector<const TensorInfo*> declared,
                    Metadata metadata) {
  File f = jf.open_unit_output(unit, written, expected);
  for (const auto& [key, value] : kModelMetadata) metadata.emplace(key, value);
  std::vector<const TensorInfo*> got;
  for (const TensorInfo& t : f.tensors()) got.push_back(&t);
  const auto by_name = [](const TensorInfo* a, const TensorInfo* b) { return a->name < b->name; };
  std::sort(got.begin(), got.end(), by_name);
  std::sort(declared.begin(), declared.end(), by_name);
  bool same = got.size() == declared.size() && f.metadata() == metadata;
  for (size_t i = 0; same && i < got.size(); ++i)
    same = got[i]->name == declared[i]->name && got[i]->dtype == declared[i]->dtype &&
           got[i]->shape == declared[i]->shape;
  if (!same)
    throw_invalid(fmt::format(
        "unit {} of job {} wrote {} otherwise than this call would (were its options other "
        "ones?); nothing was published",
        unit, jf.job().id, expected));
  return f;
}

// Every unit's receipt, and what they counted by source shard (each exactly once).
struct Receipts {
  std::vector<JobFolder::Receipt> units;
  std::vector<const std::string*> counts;  // per source shard
};

Receipts read_receipts(const JobFolder& jf, uint64_t units, size_t sources) {
  Receipts r;
  r.counts.assign(sources, nullptr);
  for (uint64_t k = 0; k < units; ++k) r.units.push_back(jf.receipt(k));
  for (uint64_t k = 0; k < units; ++k)
    for (const auto& [source, text] : r.units[k].counts) {
      if (source >= sources || r.counts[source])
        throw_io(fmt::format("the receipt of unit {} counts source shard {} again", k, source),
                 jf.folder().display());
      r.counts[source] = &text;
    }
  for (size_t i = 0; i < sources; ++i)
    if (!r.counts[i])
      throw_io(fmt::format("no unit of job {} counted source shard {}", jf.job().id, i),
               jf.folder().display());
  return r;
}

std::vector<std::string> commit(const FolderSource& src, const Location& out,
                                const FolderRewrite& how, JobFolder& jf, uint64_t units) {
  const size_t sources = src.weights.files.size();
  const Receipts receipts = read_receipts(jf, units, sources);
  // What each source shard's step declares with this call's options, for each unit's file.
  const Resharding r = plan_resharding(src, how, how.max_shard_size > 0);
  OutputSet set;
  std::vector<std::string> published;
  ShardIndex index;
  bool indexed = false;
  if (how.max_shard_size == 0) {
    std::map<std::string, const std::string*, std::less<>> shard_of;
    uint64_t total = 0;
    for (uint64_t k = 0; k < units; ++k) {
      const std::string& name = src.weights.names[k];
      const std::string& written = receipts.units[k].file;
      // As the single-process rewrite: a shard left with no tensor is not written, unless it
      // is the folder's only file.
      if (r.declared[k].empty() && sources > 1) {
        if (!written.empty())
          throw_invalid(fmt::format("unit {} of job {} wrote {}, which this call leaves out", k,
                                    jf.job().id, name));
        continue;
      }
      std::vector<const TensorInfo*> declared;
      for (const TensorInfo& t : r.declared[k]) declared.push_back(&t);
      const File f = open_unit_file(jf, k, written, name, std::move(declared), r.metadata[k]);
      for (const TensorInfo& t : f.tensors()) {
        if (const auto [it, fresh] = shard_of.emplace(t.name, &name); !fresh)
          throw_twice(t.name, *it->second, name);
        index.weight_map.emplace_back(t.name, name);
        total += t.byte_size();
      }
      index.files.push_back(name);
      published.push_back(name);
      jf.adopt(set, name, out.join(name));
    }
    index.total_size = total;
    indexed = src.weights.sharded;
  } else {
    if (r.shards.size() != units)
      throw_invalid(fmt::format("job {} planned {} units; this call's options make {} shards",
                                jf.job().id, units, r.shards.size()));
    index.total_size = 0;
    for (uint64_t k = 0; k < units; ++k) {
      const PlannedShard& s = r.shards[k];
      open_unit_file(jf, k, receipts.units[k].file, s.name, s.tensors, s.metadata);
      for (const TensorInfo* t : s.tensors) {
        index.weight_map.emplace_back(t->name, s.name);
        *index.total_size += tensor_bytes(t->dtype, t->shape).value_or(0);
      }
      index.files.push_back(s.name);
      published.push_back(s.name);
      jf.adopt(set, s.name, out.join(s.name));
    }
    indexed = r.shards.size() > 1;
  }
  if (how.restart) how.restart();
  for (size_t i = 0; i < receipts.counts.size(); ++i)
    how.load_counts(*receipts.counts[i], jf.folder().display());
  std::vector<std::string> done =
      finish_folder(src, out, how, set, std::move(published), indexed ? &index : nullptr);
  jf.finish();
  return done;
}

}  // namespace

std::vector<std::string> run_job_step(const FolderSource& src, const Location& out,
                                      const FolderRewrite& how) {
  if (!how.save_counts || !how.load_counts)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                "this rewrite does not run as a job of units");
  JobFolder jf(out, *how.job);
  const std::string plan = plan_text(src, how);
  switch (how.job->step) {
    case FolderJob::Step::plan: {
      const uint64_t units = how.max_shard_size > 0 ? plan_resharding(src, how).shards.size()
                                                    : src.weights.files.size();
      jf.begin(units, plan);
      if (how.job->units) *how.job->units = units;
      return {};
    }
    case FolderJob::Step::unit:
      jf.check(plan);
      run_unit(src, how, jf);
      return {};
    case FolderJob::Step::commit:
      jf.claim();  // the folder aside, for this commit alone; given back if it fails
      return commit(src, out, how, jf, jf.check(plan));
    case FolderJob::Step::abort:
      jf.remove();
      return {};
  }
  return {};
}

}  // namespace tlio::detail
