// model/folder_rewrite.cpp: one output shard per source shard, written into a set that is
// published once everything is written.
#include "model/folder_rewrite.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <map>

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
}

std::vector<std::string> rewrite_folder(const FolderSource& src, const Location& out, const FolderRewrite& how) {
  create_output_folder(out);
  OutputSet set;  // nothing replaces the folder's contents until every file is whole
  std::vector<std::string> published;
  ShardIndex index;
  std::map<std::string, const std::string*, std::less<>> shard_of;  // output tensor -> its file
  uint64_t in_before = 0, out_total = 0;
  for (size_t i = 0; i < src.weights.files.size(); ++i) {
    const std::string& name = src.weights.names[i];
    const uint64_t in_bytes = src.weights.files[i].header().data_size();
    const ProgressCallback progress = [&](uint64_t done, uint64_t total) {
      if (how.progress && total)
        how.progress(in_before + static_cast<uint64_t>(static_cast<double>(done) / static_cast<double>(total) *
                                                       static_cast<double>(in_bytes)),
                     src.data_bytes);
    };
    Writer w = WriterAccess::into_set(set, out.join(name));
    how.write_shard(i, w, progress);
    for (const TensorInfo& t : w.layout()) {
      const auto [it, fresh] = shard_of.emplace(t.name, &name);
      if (!fresh)
        throw Error(ErrorCode::invalid_argument, Rule::none, t.name, std::nullopt,
                    fmt::format("two shards would both hold tensor {} ({} and {})", quote_name(t.name),
                                *it->second, name));
      index.weight_map.emplace_back(t.name, name);
      out_total += t.byte_size();
    }
    in_before += in_bytes;
    // A shard whose tensors were all left out is not written (the writer, uncommitted, removes
    // its temporary), unless it is the folder's only file.
    if (w.layout().empty() && src.weights.files.size() > 1) continue;
    w.commit();
    index.files.push_back(name);
    published.push_back(name);
  }
  if (src.weights.sharded) {
    std::sort(index.weight_map.begin(), index.weight_map.end());
    index.total_size = out_total;
    set.add_text(out.join(kShardIndexFile), shard_index_json(index));
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

}  // namespace tlio::detail
