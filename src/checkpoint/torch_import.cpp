// checkpoint/torch_import.cpp: import_checkpoint: a checkpoint file or model directory planned,
// then its tensors streamed from the mapped checkpoints into the canonical writer.
#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "checkpoint/dcp_checkpoint.hpp"
#include "checkpoint/import_output.hpp"
#include "checkpoint/torch_container.hpp"
#include "checkpoint/torch_views.hpp"
#include "common/checked.hpp"
#include "common/json_text.hpp"
#include "io/os_file.hpp"
#include "model/folder_job.hpp"
#include "model/layout.hpp"
#include "model/shard_index.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/convert.hpp"
#include "tlio/dtype.hpp"
#include "tlio/error.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

using detail::Checkpoint;
using detail::gather_view;
using detail::open_checkpoint;
using detail::quote_name;
using detail::refuse_checkpoint;
using detail::TensorPlan;
using detail::TensorRecord;

/// Bytes gathered at a time for non-contiguous or byte-swapped tensors.
constexpr size_t kGatherBytes = size_t{8} << 20;

// One tensor to write: which checkpoint and plan, and its storage (checked).
struct Job {
  Checkpoint* checkpoint;
  const TensorPlan* plan;
  std::span<const std::byte> storage;
  uint64_t bytes = 0;  // as stored in the checkpoint
  Dtype dtype;         // as written: the plan's, or ImportOptions::dtype for a floating tensor
  uint64_t out_bytes = 0;
};

// Elements [first, first + count) of a tensor, in row-major order and native byte order, into
// `out`: copied as they are when contiguous, else gathered (and byte-swapped) from the view.
void read_elements(const Job& job, std::span<const std::byte> piece, unsigned swap_unit,
                   uint64_t first, uint64_t count, std::byte* out) {
  const TensorRecord& t = job.checkpoint->resolver.tensors[job.plan->tensor];
  const unsigned element = dtype_bits(job.plan->dtype) / 8;
  if (job.plan->contiguous && swap_unit == 0)
    std::memcpy(out, piece.data() + first * element, static_cast<size_t>(count * element));
  else
    gather_view(job.storage, t, element, swap_unit, first, count, out);
}

// Writes one tensor of a checkpoint: contiguous bytes file-to-file in the kernel, strided or
// byte-swapped ones gathered a chunk at a time.
void write_tensor(Writer& w, const Job& job) {
  Checkpoint& c = *job.checkpoint;
  const TensorPlan& pl = *job.plan;
  const TensorRecord& t = c.resolver.tensors[pl.tensor];
  const unsigned element = dtype_bits(pl.dtype) / 8;
  // A big-endian checkpoint's values are byte-swapped one by one; a complex value is two
  // floats, each swapped on its own (as torch.load does).
  const unsigned swap_unit = !c.big_endian || element == 1 ? 0
                             : pl.dtype == Dtype::C64      ? element / 2
                                                           : element;
  const bool swap = swap_unit != 0;
  const auto piece = job.bytes == 0 ? std::span<const std::byte>{}
                                    : job.storage.subspan(static_cast<size_t>(t.offset) * element,
                                                          static_cast<size_t>(job.bytes));
  const bool in_file = job.bytes != 0 && piece.data() >= c.bytes.data() &&
                       piece.data() <= c.bytes.data() + c.bytes.size();
  if (job.dtype != pl.dtype) {
    // Converted a chunk at a time: the source's elements read into scratch, then converted.
    const unsigned out_element = dtype_bits(job.dtype) / 8;
    const size_t count = kGatherBytes / std::max(element, out_element);
    std::vector<std::byte> scratch(count * element);
    w.write_from(
        pl.name,
        [&](uint64_t offset, std::span<std::byte> buffer) {
          const uint64_t n = buffer.size() / out_element;
          read_elements(job, piece, swap_unit, offset / out_element, n, scratch.data());
          convert(pl.dtype,
                  std::span<const std::byte>(scratch.data(), static_cast<size_t>(n * element)),
                  job.dtype, buffer, n);
        },
        count * out_element);
  } else if (pl.contiguous && !swap && in_file) {
    // Straight from the checkpoint file to the output, in the kernel: the bytes never pass
    // through this process (its memory stays small whatever the checkpoint's size).
    w.copy_from_fd(pl.name, c.fd.get(), static_cast<uint64_t>(piece.data() - c.bytes.data()));
  } else if (pl.contiguous && !swap) {
    w.write(pl.name, piece);  // an inflated entry, in memory
  } else {
    const size_t chunk = kGatherBytes / element * element;
    w.write_from(
        pl.name,
        [&](uint64_t offset, std::span<std::byte> buffer) {
          read_elements(job, piece, swap_unit, offset / element, buffer.size() / element,
                        buffer.data());
        },
        chunk);
  }
  if (in_file) detail::drop_pages(job.storage);  // gathered pages leave this process
}

// The tensors of one checkpoint's plans (storages checked before anything is written) as
// output tensors, and its alias records.
void add_jobs(Checkpoint& c, const std::vector<TensorPlan>& plans, const ImportOptions& options,
              detail::OutputFile& out) {
  for (const TensorPlan& pl : plans) {
    if (!pl.alias_of.empty()) {
      out.aliases.emplace_back(pl.name, pl.alias_of);
      continue;
    }
    const Dtype to = detail::import_dtype(pl.dtype, options);
    const Job job{&c,
                  &pl,
                  c.storage_bytes(c.resolver.tensors[pl.tensor].storage),
                  detail::tensor_size(dtype_bits(pl.dtype), pl.shape).bytes,
                  to,
                  detail::tensor_size(dtype_bits(to), pl.shape).bytes};
    out.tensors.push_back({pl.name, pl.dtype, to, pl.shape, job.out_bytes,
                           [job](Writer& w) { write_tensor(w, job); }});
  }
}

ImportReport import_directory(const std::filesystem::path& src, const std::filesystem::path& dst,
                              const ImportOptions& options) {
  ImportReport report;
  std::vector<std::string> sources;
  std::optional<detail::ShardIndex> index;
  std::error_code ec;
  if (std::filesystem::exists(src / detail::kTorchIndexFile, ec)) {
    index = detail::read_shard_index(src / detail::kTorchIndexFile);
    sources = index->files;
  } else if (std::filesystem::exists(src / detail::kTorchWeightsFile, ec)) {
    sources = {detail::kTorchWeightsFile};
  } else {
    throw_format(
        Rule::checkpoint, {},
        fmt::format("the directory has neither {} nor {}, nor a distributed "
                    "checkpoint's {} or DCP safetensors shards",
                    detail::kTorchWeightsFile, detail::kTorchIndexFile, detail::kDcpMetadataFile));
  }
  // Open and plan every source first: nothing is written until all of them check out.
  std::vector<std::unique_ptr<Checkpoint>> checkpoints;
  std::vector<std::vector<TensorPlan>> plans;
  std::vector<detail::OutputFile> outputs;
  std::unordered_map<std::string, std::string> found;  // tensor -> source file
  for (const std::string& file : sources) {
    auto c = std::make_unique<Checkpoint>();
    try {
      open_checkpoint(*c, src / file);
      CheckpointContents contents;
      plans.push_back(plan_tensors(*c, options, contents));
      report.contents.dropped_values += contents.dropped_values;
      for (DroppedValue& d : contents.dropped)  // shard by shard: a path names its shard
        if (report.contents.dropped.size() < kMaxDroppedListed)
          report.contents.dropped.push_back({file + ": " + d.path, std::move(d.kind)});
      if (report.contents.chosen_key.empty()) {  // shards of one save choose alike
        report.contents.chosen_key = contents.chosen_key;
        report.contents.other_keys = contents.other_keys;
      }
      for (auto& t : contents.tensors) {
        if (!found.emplace(t.name, file).second)
          refuse_checkpoint(t.name, fmt::format("tensor {} is in two shards", quote_name(t.name)));
        report.contents.tensors.push_back(std::move(t));
      }
      for (auto& why : contents.skipped) report.contents.skipped.push_back(std::move(why));
      detail::OutputFile o;
      add_jobs(*c, plans.back(), options, o);
      outputs.push_back(std::move(o));
    } catch (const Error& e) {
      throw e.with_source((src / file).string());
    }
    checkpoints.push_back(std::move(c));
  }
  report.contents.format = checkpoints.front()->format;
  detail::refuse_if_empty(report.contents, options);
  if (index) {  // the index must describe the shards (aliases are tensors of their shard)
    std::vector<std::vector<std::string_view>> names(sources.size());
    for (const auto& [name, file] : found)
      names[std::lower_bound(sources.begin(), sources.end(), file) - sources.begin()].push_back(
          name);
    detail::check_shard_index(*index, names, (src / detail::kTorchIndexFile).string());
  }
  detail::write_import_folder(src, dst, std::move(outputs), options, report);
  return report;
}

}  // namespace

ImportReport import_checkpoint(const std::filesystem::path& src, const std::filesystem::path& dst,
                               const ImportOptions& options) {
  detail::check_import_dtype(options);
  if (detail::abort_if_asked(detail::Location::parse(dst.native()), options.job)) return {};
  std::error_code ec;
  if (std::filesystem::is_directory(src, ec)) {
    try {
      if (is_dcp_checkpoint(src)) return detail::import_dcp(src, dst, options);
      return import_directory(src, dst, options);
    } catch (const Error& e) {
      throw e.with_source(src.string());
    } catch (const std::filesystem::filesystem_error& e) {
      throw_io(e.what(), dst.string(), e.code());
    }
  }
  if (options.max_shard_size > 0)
    throw_invalid(
        "--max-size splits model directories: give a directory holding pytorch_model.bin");
  if (options.job)
    throw_invalid("a job imports a directory (a checkpoint file is one unit: import it whole)");
  Checkpoint c;
  ImportReport report;
  try {
    open_checkpoint(c, src);
    const std::vector<TensorPlan> plans = plan_tensors(c, options, report.contents);
    detail::refuse_if_empty(report.contents, options);
    std::vector<detail::OutputFile> outputs(1);
    add_jobs(c, plans, options, outputs[0]);
    report.bytes_written = detail::write_outputs(detail::Location::parse(dst.native()), nullptr,
                                                 outputs, options, report);
    return report;
  } catch (const Error& e) {
    throw e.with_source(src.string());
  }
}

}  // namespace tlio
