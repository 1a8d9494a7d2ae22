// checkpoint/import_output.cpp: the output side every import shares: canonical files written
// tensor by tensor, shards planned by size, the index, the side files, one published set.
#include "checkpoint/import_output.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "common/json_text.hpp"
#include "format/writer_access.hpp"
#include "model/folder_job.hpp"
#include "model/layout.hpp"
#include "model/shard_index.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"

namespace tlio::detail {
namespace {

bool is_side_file(const std::filesystem::path& p) {
  // Config and tokenizer files a model directory carries; never weights or code.
  const std::string name = p.filename().string();
  const std::string ext = p.extension().string();
  if (name == kTorchIndexFile || name == kShardIndexFile) return false;
  return ext == ".json" || ext == ".txt" || ext == ".model" || ext == ".tiktoken" ||
         ext == ".jinja";
}

}  // namespace

Dtype import_dtype(Dtype dtype, const ImportOptions& options) {
  // (Floating tensors are converted as `tlio convert --dtype` converts them; integers and
  // booleans are kept.)
  return options.dtype && is_floating(dtype) && can_convert(dtype, *options.dtype) ? *options.dtype
                                                                                   : dtype;
}

void check_import_dtype(const ImportOptions& options) {
  if (options.dtype && (!is_floating(*options.dtype) || !can_convert(Dtype::F32, *options.dtype)))
    throw_invalid(fmt::format("cannot import tensors as {}: not a floating dtype tlio converts to",
                              dtype_name(*options.dtype)));
  if (options.dtype && is_sub_byte(*options.dtype))  // (tensors stream a whole element at a time)
    throw_invalid(
        fmt::format("cannot import tensors as {}: import writes whole-byte dtypes "
                    "(`tlio convert --dtype {}` the imported file)",
                    dtype_name(*options.dtype), dtype_name(*options.dtype)));
}

// An import that finds no tensor is almost always the wrong file or the wrong --key (or a
// pickle torch.load itself cannot load): an error unless an empty output is asked for.
void refuse_if_empty(const CheckpointContents& contents, const ImportOptions& options) {
  if (!contents.tensors.empty() || options.allow_empty) return;
  std::string why = fmt::format("found no tensor to import ({} other value{} dropped",
                                contents.dropped_values, contents.dropped_values == 1 ? "" : "s");
  if (!contents.skipped.empty())
    why += fmt::format(", {} tensor{} skipped", contents.skipped.size(),
                       contents.skipped.size() == 1 ? "" : "s");
  why += options.key.empty() ? ")" : fmt::format(", under key {})", quote_name(options.key));
  throw_format(Rule::checkpoint, {},
               why + "; --allow-empty (allow_empty) writes a file without tensors");
}

uint64_t write_outputs(const Location& dir_or_file, OutputSet* set,
                       const std::vector<OutputFile>& outputs, const ImportOptions& options,
                       ImportReport& report) {
  uint64_t total = 0, done = 0;
  for (const OutputFile& o : outputs)
    for (const OutputTensor& t : o.tensors) total += t.out_bytes;
  for (const OutputFile& o : outputs) {
    Writer w = set ? WriterAccess::into_set(*set, dir_or_file.join(o.name))
                   : WriterAccess::to_file(dir_or_file);
    w.set_metadata("format", "pt");
    for (const auto& [dropped, kept] : o.aliases)
      if (dropped != "format") w.set_metadata(dropped, kept);  // "format" stays "pt"
    for (const OutputTensor& t : o.tensors) w.declare(t.name, t.dtype, Shape(t.shape));
    for (const OutputTensor& t : o.tensors) {
      t.write(w);
      done += t.out_bytes;
      ++report.tensors_written;
      if (t.dtype != t.source_dtype) ++report.tensors_converted;
      if (options.progress) options.progress(done, total);
    }
    w.commit();
  }
  return done;
}

namespace {

// What the units will write: each output file's name and its tensors' names, dtypes and shapes.
std::string import_plan(const std::vector<OutputFile>& outputs) {
  std::string text;
  for (const OutputFile& o : outputs) {
    text += o.name + "\n";
    for (const OutputTensor& t : o.tensors)
      text += fmt::format(" {} {} {}\n", t.name, dtype_name(t.dtype), fmt::join(t.shape, ","));
  }
  return text;
}

}  // namespace

bool run_import_job(JobFolder& jf, const Location& out, const std::vector<OutputFile>& outputs,
                    const ImportOptions& options, ImportReport& report, OutputSet& set) {
  const std::string plan = import_plan(outputs);
  switch (jf.job().step) {
    case FolderJob::Step::plan:
      jf.begin(outputs.size(), plan);
      if (options.job->units) *options.job->units = outputs.size();
      return false;
    case FolderJob::Step::unit: {
      jf.check(plan);
      const OutputFile& mine = outputs[jf.job().unit];
      OutputSet staged;
      jf.output(mine.name);  // the name cleared of anything but a file
      report.bytes_written = write_outputs(jf.folder(), &staged, {mine}, options, report);
      staged.commit();
      jf.finish_unit(jf.job().unit, {mine.name, {}});
      return false;
    }
    case FolderJob::Step::commit:
      jf.claim();  // the folder aside, for this commit alone; given back if it fails
      jf.check(plan);
      for (size_t k = 0; k < outputs.size(); ++k) {
        const OutputFile& o = outputs[k];
        const File written = jf.open_unit_output(k, jf.receipt(k).file, o.name);
        bool same = written.tensors().size() == o.tensors.size();
        for (const OutputTensor& t : o.tensors) {
          const TensorInfo* got = same ? written.header().find(t.name) : nullptr;
          same = got && got->dtype == t.dtype && got->shape == t.shape;
          // The counts write_outputs makes as it writes, made from the plan.
          report.bytes_written += t.out_bytes;
          ++report.tensors_written;
          if (t.dtype != t.source_dtype) ++report.tensors_converted;
        }
        if (!same)
          throw_invalid(fmt::format("unit {} of job {} wrote {} otherwise than planned", k,
                                    jf.job().id, o.name));
        jf.adopt(set, o.name, out.join(o.name));
      }
      return true;
    case FolderJob::Step::abort:
      jf.remove();
      return false;
  }
  return false;
}

void write_import_folder(const std::filesystem::path& src_dir, const std::filesystem::path& dst,
                         std::vector<OutputFile> outputs, const ImportOptions& options,
                         ImportReport& report) {
  if (options.max_shard_size > 0) {  // greedily by --max-size, else as the source was split
    std::vector<uint64_t> sizes;
    for (const OutputFile& o : outputs)
      for (const OutputTensor& t : o.tensors) sizes.push_back(t.out_bytes);
    const std::vector<size_t> shard_of = plan_shards(sizes, options.max_shard_size);
    std::vector<OutputFile> split(shard_of.empty() ? 1 : shard_of.back() + 1);
    size_t k = 0;
    for (OutputFile& o : outputs) {
      for (OutputTensor& t : o.tensors) split[shard_of[k++]].tensors.push_back(std::move(t));
      // Alias records go with the shard of their kept tensor.
      for (auto& a : o.aliases)
        for (OutputFile& s : split)
          if (std::any_of(s.tensors.begin(), s.tensors.end(),
                          [&](const OutputTensor& t) { return t.name == a.second; }))
            s.aliases.push_back(a);
    }
    outputs = std::move(split);
  }
  const size_t n = outputs.size();
  for (size_t i = 0; i < n; ++i) outputs[i].name = weights_file_name(i + 1, n);

  const Location out = Location::parse(dst.native());
  OutputSet set;  // the folder's weights change only once every file is whole
  std::optional<JobFolder> job;
  if (options.job) {
    if (!run_import_job(job.emplace(out, *options.job), out, outputs, options, report, set)) return;
  } else {
    create_output_folder(out);
    report.bytes_written = write_outputs(out, &set, outputs, options, report);
  }
  std::vector<std::string> written;
  for (const OutputFile& o : outputs) written.push_back(o.name);
  if (n > 1) {
    ShardIndex out_index;
    out_index.total_size = report.bytes_written;
    for (const OutputFile& o : outputs) {
      out_index.files.push_back(o.name);
      for (const OutputTensor& t : o.tensors) out_index.weight_map.emplace_back(t.name, o.name);
    }
    std::sort(out_index.weight_map.begin(), out_index.weight_map.end());
    set.add_text(out.join(kShardIndexFile), shard_index_json(out_index));
    written.push_back(kShardIndexFile);
  }
  if (!src_dir.empty())
    for (const auto& entry : std::filesystem::directory_iterator(src_dir)) {
      if (!entry.is_regular_file() || !is_side_file(entry.path())) continue;
      set.add_copy(entry.path(), out.join(entry.path().filename().string()));
      written.push_back(entry.path().filename().string());
    }
  publish_weights(set, out, written);
  if (job) job->finish();
}

}  // namespace tlio::detail
