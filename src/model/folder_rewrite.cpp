// model/folder_rewrite.cpp: one output shard per source shard, or the output re-sharded by size
// (each source shard's step probed for its tensors, then routed into the output files that
// hold them), written into a set that is published once everything is written.
#include "model/folder_rewrite.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

#include "common/json_text.hpp"
#include "format/writer_access.hpp"
#include "model/shard_index.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

FolderSource::FolderSource(Location dir, const OpenOptions& options)
    : where(std::move(dir), options), weights(open_weights(where)) {
  std::vector<const File*> files;
  for (const File& f : weights.files) {
    files.push_back(&f);
    data_bytes += f.header().data_size();
  }
  set = std::make_unique<TensorSet>(std::move(files));
  set->set_quantization_config(read_quantization_config(where, weights.files));
}

// The index (for several shards), the carried files (config.json edited by the caller), the last
// check, then everything published as one set.
std::vector<std::string> finish_folder(const FolderSource& src, const Location& out,
                                       const FolderRewrite& how, OutputSet& set,
                                       std::vector<std::string> published, ShardIndex* index) {
  if (index) {
    std::sort(index->weight_map.begin(), index->weight_map.end());
    set.add_text(out.join(kShardIndexFile), shard_index_json(*index));
    published.push_back(kShardIndexFile);
  }
  for (const char* file : kCarriedFiles) {
    std::optional<std::string> text = src.where.read_text(file);
    if (!text) continue;
    if (file == std::string_view(kConfigFile) && how.edit_config)
      text = how.edit_config(*text, src.where.name_of(file));
    set.add_text(out.join(file), *text);
    published.push_back(file);
  }
  if (how.before_publish) how.before_publish();
  publish_weights(set, out, published);
  return published;
}

namespace {

// Shard i's share of the source bytes, as its step reports its own progress.
ProgressCallback shard_progress(const FolderSource& src, const FolderRewrite& how, size_t i,
                                uint64_t before) {
  const uint64_t in_bytes = src.weights.files[i].header().data_size();
  return [&src, &how, in_bytes, before](uint64_t done, uint64_t total) {
    if (how.progress && total)
      how.progress(
          before + static_cast<uint64_t>(static_cast<double>(done) / static_cast<double>(total) *
                                         static_cast<double>(in_bytes)),
          src.data_bytes);
  };
}

}  // namespace

[[noreturn]] void throw_twice(const std::string& tensor, const std::string& a,
                              const std::string& b) {
  throw Error(
      ErrorCode::invalid_argument, Rule::none, tensor, std::nullopt,
      fmt::format("two shards would both hold tensor {} ({} and {})", quote_name(tensor), a, b));
}

namespace {

// What each source shard's step declares (probed), packed module by module into shards.
std::vector<PlannedShard> pack_shards(const std::vector<std::string>& sources,
                                      const std::vector<std::vector<TensorInfo>>& declared,
                                      const std::vector<Metadata>& metadata, uint64_t max_bytes) {
  struct Module {
    std::vector<std::pair<size_t, const TensorInfo*>> tensors;  // (source shard, tensor)
    uint64_t bytes = 0;
  };
  std::vector<Module> modules;  // in order of first appearance
  std::map<std::string_view, size_t, std::less<>> module_index;
  std::map<std::string_view, size_t, std::less<>> source_of;  // tensor -> source shard
  for (size_t i = 0; i < declared.size(); ++i)
    for (const TensorInfo& t : declared[i]) {
      if (const auto [it, fresh] = source_of.emplace(t.name, i); !fresh)
        throw_twice(t.name, sources[it->second], sources[i]);
      const auto [m, fresh] = module_index.emplace(module_of(t.name), modules.size());
      if (fresh) modules.emplace_back();
      modules[m->second].tensors.emplace_back(i, &t);
      modules[m->second].bytes += tensor_bytes(t.dtype, t.shape).value_or(0);
    }
  std::vector<PlannedShard> shards(1);
  for (const Module& m : modules) {
    if (shards.back().bytes > 0 && shards.back().bytes + m.bytes > max_bytes) shards.emplace_back();
    PlannedShard& s = shards.back();
    for (const auto& [source, t] : m.tensors) {
      s.tensors.push_back(t);
      s.first_source = std::min(s.first_source, source);
      s.last_source = std::max(s.last_source, source);
      for (const auto& [key, value] : metadata[source]) s.metadata.emplace(key, value);
    }
    s.bytes += m.bytes;
  }
  for (size_t k = 0; k < shards.size(); ++k) {
    shards[k].name =
        shards.size() == 1 ? kSingleWeightsFile : weights_file_name(k + 1, shards.size());
    if (shards[k].tensors.empty()) shards[k].first_source = 0;  // nothing at all: one empty file
  }
  return shards;
}

}  // namespace

Resharding plan_resharding(const FolderSource& src, const FolderRewrite& how, bool pack) {
  Resharding r;
  for (size_t i = 0; i < src.weights.files.size(); ++i) {
    Writer probe = WriterAccess::probe();
    try {
      how.write_shard(i, probe, {});
    } catch (const LayoutProbed&) {
    }
    r.declared.push_back(WriterAccess::probed_tensors(probe));
    r.metadata.push_back(WriterAccess::probed_metadata(probe));
  }
  if (how.restart) how.restart();
  if (pack) r.shards = pack_shards(src.weights.names, r.declared, r.metadata, how.max_shard_size);
  return r;
}

namespace {

std::vector<std::string> rewrite_resharded(const FolderSource& src, const Location& out,
                                           const FolderRewrite& how) {
  const size_t n = src.weights.files.size();
  const Resharding planned = plan_resharding(src, how);
  const std::vector<std::vector<TensorInfo>>& declared = planned.declared;
  const std::vector<PlannedShard>& plan = planned.shards;

  create_output_folder(out);
  OutputSet set;
  // Each output is opened when the first source shard that writes into it comes (modules follow
  // the source's order, so few are open at once) and committed after the last one.
  std::vector<std::optional<Writer>> outputs(plan.size());
  std::unordered_map<std::string, Writer*> routes;
  ShardIndex index;
  index.total_size = 0;
  for (const PlannedShard& s : plan)
    for (const TensorInfo* t : s.tensors) {
      index.weight_map.emplace_back(t->name, s.name);
      *index.total_size += tensor_bytes(t->dtype, t->shape).value_or(0);
    }
  uint64_t before = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < plan.size(); ++k) {
      if (plan[k].first_source != i) continue;
      Writer& w =
          outputs[k].emplace(WriterAccess::into_set(set, out.join(plan[k].name), kModelMetadata));
      w.set_metadata(plan[k].metadata);
      for (const TensorInfo* t : plan[k].tensors) {
        w.declare(t->name, t->dtype, t->shape);
        routes.emplace(t->name, &w);
      }
    }
    std::unordered_map<std::string, Writer*> mine;
    for (const TensorInfo& t : declared[i]) mine.emplace(t.name, routes.at(t.name));
    Writer w = mine.empty() ? Writer::to_memory() : WriterAccess::routing(std::move(mine));
    how.write_shard(i, w, shard_progress(src, how, i, before));
    w.commit();
    before += src.weights.files[i].header().data_size();
    for (size_t k = 0; k < plan.size(); ++k)
      if (plan[k].last_source == i) {
        outputs[k]->commit();
        outputs[k].reset();
      }
  }
  std::vector<std::string> published;
  for (const PlannedShard& s : plan) {
    published.push_back(s.name);
    index.files.push_back(s.name);
  }
  return finish_folder(src, out, how, set, std::move(published),
                       plan.size() > 1 ? &index : nullptr);
}

}  // namespace

std::string_view module_of(std::string_view tensor) {
  for (size_t at = tensor.rfind(".weight"); at != std::string_view::npos;
       at = at == 0 ? std::string_view::npos : tensor.rfind(".weight", at - 1)) {
    const size_t after = at + 7;
    if (after == tensor.size() || tensor[after] == '.' || tensor[after] == '_')
      return tensor.substr(0, at);
  }
  const size_t dot = tensor.rfind('.');
  return dot == std::string_view::npos ? tensor : tensor.substr(0, dot);
}

std::vector<std::string> rewrite_folder(const FolderSource& src, const Location& out,
                                        const FolderRewrite& how) {
  if (how.job) return run_job_step(src, out, how);
  if (how.max_shard_size > 0) return rewrite_resharded(src, out, how);
  create_output_folder(out);
  OutputSet set;  // nothing replaces the folder's contents until every file is whole
  std::vector<std::string> published;
  ShardIndex index;
  std::map<std::string, const std::string*, std::less<>> shard_of;  // output tensor -> its file
  uint64_t in_before = 0, out_total = 0;
  for (size_t i = 0; i < src.weights.files.size(); ++i) {
    const std::string& name = src.weights.names[i];
    Writer w = WriterAccess::into_set(set, out.join(name), kModelMetadata);
    how.write_shard(i, w, shard_progress(src, how, i, in_before));
    for (const TensorInfo& t : w.layout()) {
      const auto [it, fresh] = shard_of.emplace(t.name, &name);
      if (!fresh) throw_twice(t.name, *it->second, name);
      index.weight_map.emplace_back(t.name, name);
      out_total += t.byte_size();
    }
    in_before += src.weights.files[i].header().data_size();
    // A shard whose tensors were all left out is not written (the writer, uncommitted, removes
    // its temporary), unless it is the folder's only file.
    if (w.layout().empty() && src.weights.files.size() > 1) continue;
    w.commit();
    index.files.push_back(name);
    published.push_back(name);
  }
  index.total_size = out_total;
  return finish_folder(src, out, how, set, std::move(published),
                       src.weights.sharded ? &index : nullptr);
}

}  // namespace tlio::detail
