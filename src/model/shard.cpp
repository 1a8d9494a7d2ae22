// model/shard.cpp: tlio shard / tlio merge, and size parsing.
#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "format/header_text.hpp"
#include "format/writer_access.hpp"
#include "io/atomic_file.hpp"
#include "model/layout.hpp"
#include "model/location.hpp"
#include "model/shard_index.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/writer.hpp"

namespace tlio {

using detail::quote_name;

uint64_t parse_size(std::string_view text) {
  auto bad = [&]() -> uint64_t {
    throw_invalid(fmt::format("invalid size {} (examples: 5GB, 500MB, 2GiB, 40KB, 123456)",
                              quote_name(text)));
  };
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) return bad();
  std::string unit(text.substr(digits));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  struct Unit {
    const char* name;
    double factor;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},      {"B", 1},      {"KB", 1e3},      {"MB", 1e6},      {"GB", 1e9},
      {"TB", 1e12}, {"KIB", 1024}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1099511627776.0}};
  const Unit* u = nullptr;
  for (const Unit& x : kUnits)
    if (unit == x.name) u = &x;
  if (!u) return bad();
  const std::string number(text.substr(0, digits));
  double value = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc{} || end != number.data() + number.size()) return bad();
  const double bytes = value * u->factor;
  if (!(bytes >= 1)) throw_invalid(fmt::format("size {} is less than 1 byte", quote_name(text)));
  if (bytes >= 18446744073709549568.0)  // the largest double below 2^64
    throw_invalid(fmt::format("size {} is more than 16 EiB", quote_name(text)));
  return static_cast<uint64_t>(std::round(bytes));
}

ShardReport shard_file(const File& src, const std::filesystem::path& out_dir, uint64_t max_size,
                       const ProgressCallback& progress) {
  if (max_size == 0) throw_invalid("the shard size limit must be at least 1 byte");
  const detail::Location out = detail::Location::parse(out_dir.native());
  detail::create_output_folder(out);

  // Greedy over the canonical order.
  std::vector<TensorInfo> layout = src.tensors();
  detail::canonical_layout(layout);
  std::vector<uint64_t> sizes;
  uint64_t total = 0;
  for (const TensorInfo& t : layout) {
    sizes.push_back(t.byte_size());
    total += t.byte_size();
  }
  const std::vector<size_t> shard_of = detail::plan_shards(sizes, max_size);
  std::vector<std::vector<const TensorInfo*>> shards(shard_of.empty() ? 1 : shard_of.back() + 1);
  for (size_t k = 0; k < layout.size(); ++k)
    shards[shard_of[k]].push_back(&src.header().at(layout[k].name));
  const size_t n = shards.size();
  ShardReport report;
  report.total_size = total;
  detail::ShardIndex index;
  index.total_size = total;
  uint64_t copied = 0;
  detail::OutputSet set;  // nothing replaces the folder's weights until every file is whole
  for (size_t i = 0; i < n; ++i) {
    const std::string name = detail::weights_file_name(i + 1, n);
    // Metadata without "format" gets "pt" (transformers 4.x refuses such a model's files); none
    // at all stays none (4.x reads that, and the merged shards are the canonical file again).
    Writer w = detail::WriterAccess::into_set(
        set, out.join(name), src.metadata().empty() ? Metadata{} : detail::kModelMetadata);
    w.set_metadata(src.metadata());
    for (const TensorInfo* t : shards[i]) {
      w.declare(t->name, t->dtype, t->shape);
      index.weight_map.emplace_back(t->name, name);
    }
    std::vector<std::string_view> names;
    for (const TensorInfo* t : shards[i]) names.push_back(t->name);
    w.copy_many_from(src, names, {}, [&](uint64_t bytes) {
      copied += bytes;
      if (progress) progress(copied, total);
    });
    w.commit();
    report.files.push_back(name);
    index.files.push_back(name);
  }
  if (n > 1) {
    std::sort(index.weight_map.begin(), index.weight_map.end());
    set.add_text(out.join(detail::kShardIndexFile), detail::shard_index_json(index));
    report.files.push_back(detail::kShardIndexFile);
  }
  detail::publish_weights(set, out, report.files);
  return report;
}

void merge_shards(const std::filesystem::path& dir, const std::filesystem::path& out,
                  const ProgressCallback& progress, const OpenOptions& options) {
  const detail::ModelLocation where(detail::Location::parse(dir.native()), options);
  detail::WeightFiles weights = detail::open_weights(where);
  const std::vector<File>& files = weights.files;
  const std::vector<std::string>& names = weights.names;
  for (size_t i = 1; i < files.size(); ++i) {
    const Metadata& a = files[0].metadata();
    const Metadata& b = files[i].metadata();
    if (a == b) continue;
    std::string key;
    for (const auto& [k, v] : a)
      if (!b.count(k) || b.at(k) != v) {
        key = k;
        break;
      }
    if (key.empty())
      for (const auto& [k, v] : b)
        if (!a.count(k)) {
          key = k;
          break;
        }
    const auto show = [&](const Metadata& m) {
      return m.count(key) ? quote_name(m.at(key)) : std::string("absent");
    };
    throw Error(ErrorCode::format, Rule::index, key, std::nullopt,
                fmt::format("the shards' metadata differ: {} is {} in {} but {} in {}",
                            quote_name(key), show(a), names[0], show(b), names[i]),
                where.name());
  }
  Writer w = Writer::to_file(out);
  w.set_metadata(files[0].metadata());
  for (const File& f : files)
    for (const TensorInfo& t : f.tensors()) w.declare(t.name, t.dtype, t.shape);  // dups refused
  uint64_t total = 0, done = 0;
  for (const File& f : files) total += f.header().data_size();
  for (const File& f : files) {
    std::vector<std::string_view> tensor_names;
    for (const TensorInfo& t : f.tensors()) tensor_names.push_back(t.name);
    w.copy_many_from(f, tensor_names, {}, [&](uint64_t bytes) {
      done += bytes;
      if (progress) progress(done, total);
    });
  }
  w.commit();
}

}  // namespace tlio
