// quant/dequantize_file.cpp: whole-file dequantize (tlio dequantize): quantized weights restored
// chunk by chunk, every other tensor copied as it is.
#include <fmt/core.h>

#include <algorithm>
#include <memory>

#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "quant/rewrite_steps.hpp"
#include "quant/schemes.hpp"
#include "tlio/error.hpp"
#include "tlio/quant.hpp"

namespace tlio {

namespace detail {

void check_dequantize_dtype(std::optional<Dtype> dtype) {
  if (dtype && *dtype != Dtype::F32 && *dtype != Dtype::F16 && *dtype != Dtype::BF16)
    throw_invalid(fmt::format("dequantize writes F32, F16 or BF16, not {}", dtype_name(*dtype)));
}

void erase_quantization_records(Metadata& metadata) {
  metadata.erase("quant");
  metadata.erase("quantization_config");
  if (auto f = metadata.find(kSourceFormat); f != metadata.end()) {
    metadata["format"] = f->second;
    metadata.erase(f);
  }
}

DequantizeReport dequantize_into(const TensorSet& set, const File& shard, Writer& w,
                                 const std::vector<QuantizedWeight>& weights,
                                 std::optional<Dtype> dtype, const ProgressCallback& progress) {
  check_dequantize_dtype(dtype);
  DequantizeReport report;
  std::vector<const QuantizedWeight*> here;  // restored into this shard
  for (const QuantizedWeight& q : weights) {
    if (report.scheme.find(q.scheme.name()) == std::string::npos)
      report.scheme += (report.scheme.empty() ? "" : ", ") + q.scheme.name();
    if (shard.header().find(q.stored.front())) here.push_back(&q);
  }
  report.restored = here.size();
  const auto stored = stored_tensor_names(weights);
  auto is_stored_part = [&](const std::string& name) { return stored.contains(name); };
  Metadata meta = shard.metadata();
  erase_quantization_records(meta);
  w.set_metadata(meta);
  for (const TensorInfo& t : shard.tensors())
    if (!is_stored_part(t.name)) w.declare(t.name, t.dtype, t.shape);
  for (const QuantizedWeight* q : here) {
    if (shard.header().find(q->name) && !is_stored_part(q->name))
      throw_invalid(
          fmt::format("cannot restore {}: a tensor of that name exists", quote_name(q->name)));
    w.declare(q->name, dtype.value_or(q->dtype), q->shape);
  }
  uint64_t total = 0, done = 0;
  for (const TensorInfo& t : w.layout()) total += t.byte_size();
  auto tick = [&](uint64_t bytes) {
    done += bytes;
    if (progress) progress(done, total);
  };
  std::vector<std::string_view> kept;
  for (const TensorInfo& t : shard.tensors())
    if (!is_stored_part(t.name)) kept.push_back(t.name);
  w.copy_many_from(shard, kept, {}, tick);
  for (const QuantizedWeight* q : here)
    write_decoded(set, *q, dtype.value_or(q->dtype), w, q->name, tick);
  return report;
}

}  // namespace detail

DequantizeReport dequantize_file(const File& src, const std::filesystem::path& out,
                                 std::optional<Dtype> dtype, const ProgressCallback& progress) {
  detail::check_dequantize_dtype(dtype);
  const std::vector<QuantizedWeight> weights = find_quantized_weights(src);
  Writer w = Writer::to_file(out);
  DequantizeReport report =
      detail::dequantize_into(detail::TensorSet({&src}), src, w, weights, dtype, progress);
  w.commit();
  return report;
}

}  // namespace tlio
