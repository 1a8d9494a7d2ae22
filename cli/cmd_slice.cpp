// cli/cmd_slice.cpp: `tlio slice SOURCE TENSOR[SLICE]... -o OUT [--dtype D] [--keep-packed]
// [--max-inflight SIZE] [--max-memory SIZE] [--dry-run] [--json]`: slices of tensors of a file, folder or URL into a
// new file, through a read plan (only the bytes the slices need are read; docs/loading.md).
//
// Memory stays bounded for any size: the slices are read in batches of at most --max-memory bytes
// (one plan, cleared between batches), and a slice larger than that is read in runs of its first
// dimension, appended to the output in order.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "slice_spec.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/read_plan.hpp"
#include "tlio/writer.hpp"

namespace tlio::cli {
namespace {

// Output bytes held at once by default (besides the plan's own max_inflight_bytes of scratch).
constexpr uint64_t kDefaultBatchBytes = uint64_t{256} << 20;

// A TENSOR[SLICE] argument: the name before the last '[' when the argument ends with ']' (so a
// name that itself ends with ']' is given as NAME[]), else the whole argument.
struct SliceArg {
  std::string text, name, spec;
};

SliceArg split_slice_arg(const std::string& text) {
  if (!text.empty() && text.back() == ']') {
    const size_t open = text.rfind('[');
    if (open != std::string::npos)
      return {text, text.substr(0, open), text.substr(open + 1, text.size() - open - 2)};
  }
  return {text, text, ""};
}

// The plan's slice for an argument, numpy's meaning (negative positions, clamped ranges).
std::vector<SliceIndex> plan_indices(const SliceArg& arg, const PlanTensor& t) {
  const std::vector<SliceEntry> entries = parse_slice_spec(arg.spec);
  for (const SliceEntry& e : entries)
    if (!e.index && e.step && *e.step != 1)
      throw UsageError(fmt::format("'{}': a step other than 1 (read plans read ranges; take every "
                                   "other row with `tlio cat --slice`)", arg.text));
  const std::vector<uint64_t> shape(t.shape.begin(), t.shape.end());
  std::vector<SliceIndex> out;
  for (const DimPick& p : resolve_slice(entries, shape, t.name, fmt::format("'{}'", arg.text)))
    out.push_back(p.keep ? SliceIndex::range(p.start, p.start + p.count) : SliceIndex::at(p.start));
  return out;
}

// One piece of the output: an item's slice, or a run of its first kept dimension.
struct Unit {
  size_t item = 0;
  std::vector<SliceIndex> slice;
  uint64_t bytes = 0;
};

// The units of an item: itself, or runs of its first kept dimension that each fit in
// `batch_bytes` (when that dimension's rows are whole bytes).
void add_units(size_t item, const std::vector<SliceIndex>& slice, const PlanItem& info,
               uint64_t batch_bytes, std::vector<Unit>& out) {
  const auto kept = std::find_if(slice.begin(), slice.end(),
                                 [](const SliceIndex& s) { return s.kind == SliceIndex::Kind::range; });
  const uint64_t rows = info.shape.empty() ? 0 : info.shape[0];
  // Dimensions after the slice's entries are whole: the first kept one may be one of them.
  const size_t dim = static_cast<size_t>(kept - slice.begin());
  if (info.byte_size <= batch_bytes || rows < 2 || info.byte_size % rows != 0) {
    out.push_back({item, slice, info.byte_size});
    return;
  }
  const uint64_t row_bytes = info.byte_size / rows;
  const uint64_t per = std::max<uint64_t>(1, batch_bytes / row_bytes);
  std::vector<SliceIndex> s = slice;
  if (kept == slice.end()) s.resize(dim + 1, SliceIndex::all());
  const uint64_t first = s[dim].start;
  for (uint64_t r = 0; r < rows; r += per) {
    const uint64_t n = std::min(per, rows - r);
    s[dim] = SliceIndex::range(first + r, first + r + n);
    out.push_back({item, s, n * row_bytes});
  }
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace

void add_slice(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "slice", "Write slices of tensors to a new file, reading only the bytes they need");
  cmd->footer(
      "Each TENSOR[SLICE] names a tensor and, in brackets, one entry per leading dimension as\n"
      "numpy takes them: an index (drops the dimension) or a range start:stop (negative counts\n"
      "from the end; left out: whole). A name alone is the whole tensor; a name that ends with\n"
      "']' is given as NAME[]. A quantized weight is named by its logical name: only the blocks\n"
      "its slice needs are read, and it is dequantized (--dtype F32, F16 or BF16; --keep-packed\n"
      "slices its stored tensors instead). SOURCE may be a file, a folder of weights (its\n"
      "shards) or a URL. The output is canonical, without metadata; each tensor keeps its name.\n"
      "--dry-run lists the tensors and the reads without reading them.\n\n"
      "Examples:\n"
      "  tlio slice model/ 'model.embed_tokens.weight[0:8000]' -o shard0.safetensors\n"
      "  tlio slice model.safetensors 'lm_head.weight[:, 0:2048]' 'norm.weight' -o part.safetensors\n"
      "  tlio slice hf://org/model 'layers.0.mlp.up_proj.weight[0:1024]' --dry-run --json");
  struct Args {
    std::string source, out, dtype, max_inflight, max_memory;
    std::vector<std::string> tensors;
    bool keep_packed = false, dry_run = false, json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("SOURCE", a->source, "File, folder of weights, or URL (http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("TENSOR[SLICE]", a->tensors, "e.g. 'w[0:1024]', 'w[:, -512:]', 'w[3]', 'bias'")
      ->required()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              parse_slice_spec(split_slice_arg(v).spec);
            } catch (const UsageError& e) {
              return e.what();
            }
            return {};
          },
          ""));
  cmd->add_option("-o,--output", a->out, "Output file (or s3://, gs:// location; - for stdout)");
  cmd->add_option("--dtype", a->dtype, "What quantized weights dequantize to: F32, F16 or BF16 (default: F32; bitsandbytes 4-bit: the dtype it was quantized from)")
      ->check([](const std::string& v) -> std::string {
        const auto d = tlio::parse_dtype_alias(v);
        if (!d || (*d != Dtype::F32 && *d != Dtype::F16 && *d != Dtype::BF16))
          return "quantized weights dequantize to F32, F16 or BF16, not '" + v + "'";
        return {};
      });
  cmd->add_flag("--keep-packed", a->keep_packed,
                "Name quantized weights' stored tensors and slice them as they are");
  cmd->add_option("--max-inflight", a->max_inflight,
                  "Scratch for reads that span gaps (default 64MiB)")
      ->check(size_check());
  cmd->add_option("--max-memory", a->max_memory,
                  "Output bytes held at once; larger slices are read in runs of rows (default 256MiB)")
      ->check(size_check());
  cmd->add_flag("--dry-run", a->dry_run, "List the tensors and the reads; read and write nothing");
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"source\", \"output\", \"dry_run\", \"files\", "
                "\"tensors\": [{\"name\", \"dtype\", \"shape\", \"bytes\", \"quantized\"}], "
                "\"reads\": [{\"file\", \"offset\", \"length\"}], \"bytes_read\", \"bytes_wanted\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      if (a->out.empty() && !a->dry_run) throw UsageError("slice: -o OUT is needed (or --dry-run)");
      if (!a->out.empty() && !a->dry_run) check_stdout_output(a->out, a->json);
      if (a->keep_packed && !a->dtype.empty())
        throw UsageError("slice: --dtype is for dequantized weights; --keep-packed copies them as stored");
      ReadPlanOptions options;
      options.open = open_options();
      options.keep_packed = a->keep_packed;
      if (!a->max_inflight.empty()) options.max_inflight_bytes = parse_size(a->max_inflight);
      const uint64_t batch_bytes = a->max_memory.empty() ? kDefaultBatchBytes : parse_size(a->max_memory);
      ReadPlan plan = ReadPlan::open(a->source, options);
      const std::optional<Dtype> as = a->dtype.empty() ? std::nullopt : parse_dtype_alias(a->dtype);

      // Every argument checked, and every item's shape known, before a byte is read.
      std::vector<std::string> names;
      for (const PlanTensor& t : plan.tensors()) names.push_back(t.name);
      std::vector<Unit> units;
      std::vector<PlanItem> items;
      std::vector<bool> quantized;
      std::set<std::string> seen;
      for (const std::string& text : a->tensors) {
        const SliceArg arg = split_slice_arg(text);
        const PlanTensor* t = plan.find(arg.name);
        if (!t) {
          const std::string near = closest(arg.name, names);
          throw UsageError(fmt::format("no tensor {} in {}{}", display_name(arg.name), plan.name(),
                                       near.empty() ? "" : fmt::format("; did you mean {}?", display_name(near))));
        }
        if (!seen.insert(arg.name).second)
          throw UsageError(fmt::format("{} is named twice (the output has one tensor of each name)",
                                       display_name(arg.name)));
        const std::vector<SliceIndex> slice = plan_indices(arg, *t);
        const size_t item = plan.add(arg.name, slice, t->quantized ? as : std::nullopt);
        items.push_back(plan.items()[item]);
        quantized.push_back(t->quantized);
        add_units(items.size() - 1, slice, items.back(), batch_bytes, units);
      }
      plan.clear();

      std::optional<Writer> writer;
      if (!a->dry_run) {
        writer.emplace(Writer::to_file(a->out));
        for (const PlanItem& it : items) writer->declare(it.name, it.dtype, Shape(it.shape));
      }
      std::vector<PlannedRead> reads;
      uint64_t read_bytes = 0, wanted_bytes = 0;
      std::vector<std::byte> buffer;
      ProgressBar bar("slicing");
      uint64_t total = 0, done = 0;
      for (const PlanItem& it : items) total += it.byte_size;
      for (size_t begin = 0; begin < units.size();) {
        // The next batch: units while they fit (at least one).
        size_t end = begin;
        uint64_t batch = 0;
        while (end < units.size() && (end == begin || batch + units[end].bytes <= batch_bytes))
          batch += units[end++].bytes;
        plan.clear();
        for (size_t u = begin; u < end; ++u)
          plan.add(items[units[u].item].name, units[u].slice, quantized[units[u].item] ? as : std::nullopt);
        for (const PlannedRead& r : plan.reads()) {
          reads.push_back(r);
          read_bytes += r.length;
        }
        wanted_bytes += plan.wanted_bytes();
        if (writer) {
          buffer.resize(batch);
          uint64_t at = 0;
          for (size_t k = 0; k < end - begin; ++k) {
            const uint64_t n = plan.items()[k].byte_size;
            plan.set_destination(k, {buffer.data() + at, n});
            at += n;
          }
          plan.execute();
          at = 0;
          for (size_t u = begin; u < end; ++u) {
            writer->append(items[units[u].item].name, {buffer.data() + at, units[u].bytes});
            at += units[u].bytes;
          }
          done += batch;
          bar.update(done, total);
        }
        begin = end;
      }
      bar.finish();
      plan.clear();
      if (writer) writer->commit();

      if (a->json) {
        std::string tensors, read_list, files;
        for (size_t i = 0; i < items.size(); ++i)
          tensors += fmt::format("{}{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"bytes\":{},\"quantized\":{}}}",
                                 i ? "," : "", json_string(items[i].name), dtype_name(items[i].dtype),
                                 fmt::join(items[i].shape, ","), items[i].byte_size,
                                 quantized[i] ? "true" : "false");
        for (size_t i = 0; i < reads.size(); ++i)
          read_list += fmt::format("{}{{\"file\":{},\"offset\":{},\"length\":{}}}", i ? "," : "",
                                   reads[i].file, reads[i].offset, reads[i].length);
        for (size_t i = 0; i < plan.file_names().size(); ++i)
          files += (i ? "," : "") + json_string(plan.file_names()[i]);
        fmt::print("{{\"source\":{},\"output\":{},\"dry_run\":{},\"files\":[{}],\"tensors\":[{}],"
                   "\"reads\":[{}],\"bytes_read\":{},\"bytes_wanted\":{}}}\n",
                   json_string(plan.name()), a->out.empty() ? "null" : json_string(a->out), a->dry_run,
                   files, tensors, read_list, read_bytes, wanted_bytes);
        return kExitOk;
      }
      std::FILE* out = a->dry_run ? stdout : report_stream(a->out);
      if (a->dry_run) {
        size_t name_width = 6;
        for (const PlanItem& it : items) name_width = std::max(name_width, display_width(display_name(it.name)));
        fmt::print(out, "{}  {:<8}  {:<16}  {}\n", pad("tensor", name_width), "dtype", "shape", "bytes");
        for (size_t i = 0; i < items.size(); ++i)
          fmt::print(out, "{}  {:<8}  {:<16}  {}{}\n", pad(display_name(items[i].name), name_width),
                     dtype_name(items[i].dtype), shape_text(items[i].shape), thousands(items[i].byte_size),
                     quantized[i] ? " (dequantized)" : "");
        for (size_t f = 0; f < plan.file_names().size(); ++f) {
          uint64_t n = 0, bytes = 0;
          for (const PlannedRead& r : reads)
            if (r.file == f) ++n, bytes += r.length;
          if (n) fmt::print(out, "{}: {} read{}, {} bytes\n", plan.file_names()[f], n, n == 1 ? "" : "s", thousands(bytes));
        }
      }
      fmt::print(out, "{}{}: {} tensor{}, {} bytes {} ({} wanted){}\n", plan.name(),
                 a->dry_run ? "" : " -> " + a->out, items.size(), items.size() == 1 ? "" : "s",
                 thousands(read_bytes), a->dry_run ? "to read" : "read", thousands(wanted_bytes),
                 a->dry_run ? "; nothing read, nothing written" : "");
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli
