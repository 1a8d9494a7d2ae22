// cli/cmd_slice.cpp: `tlio slice SOURCE TENSOR[SLICE]... -o OUT [--dtype D] [--keep-packed]
// [--max-inflight SIZE] [--max-memory SIZE] [--dry-run] [--json]`: slices of tensors of a file,
// folder or URL into a new file, through a read plan (only the bytes the slices need are read;
// docs/loading.md); of a GGUF file, through GgufFile::read_slice (only the blocks they touch).
//
// Memory stays bounded for any size: the slices are read in batches of at most --max-memory bytes
// (one plan, cleared between batches), and a slice larger than that in runs of its first
// dimension (a row larger than that, in runs of the next), appended to the output in order.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "slice_spec.hpp"
#include "tlio/error.hpp"
#include "tlio/gguf.hpp"
#include "tlio/model.hpp"
#include "tlio/read_plan.hpp"
#include "tlio/weights.hpp"
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

// The slice of tensor `name` of `shape` an argument asks for, numpy's meaning (negative
// positions, clamped ranges): one entry for every dimension.
std::vector<SliceIndex> plan_indices(const SliceArg& arg, const std::string& name,
                                     const std::vector<uint64_t>& shape) {
  const std::vector<SliceEntry> entries = parse_slice_spec(arg.spec);
  for (const SliceEntry& e : entries)
    if (!e.index && e.step && *e.step != 1)
      throw UsageError(
          fmt::format("'{}': a step other than 1 (slices are read as ranges; take every "
                      "other row with `tlio cat --slice`)",
                      arg.text));
  std::vector<SliceIndex> out;
  for (const DimPick& p : resolve_slice(entries, shape, name, fmt::format("'{}'", arg.text)))
    out.push_back(p.keep ? SliceIndex::range(p.start, p.start + p.count) : SliceIndex::at(p.start));
  return out;
}

// One piece of the output: an item's slice, or a run of it. `slice` has an entry for every
// dimension of the tensor.
struct Unit {
  size_t item = 0;
  std::vector<SliceIndex> slice;
  uint64_t bytes = 0;
};

uint64_t count_of(const SliceIndex& s) {
  return s.kind == SliceIndex::Kind::index ? 1 : s.stop - s.start;
}

// Splits `s` into units of at most `budget` bytes, in output order: runs of its first dimension
// at or after `from` that has more than one position; when one row alone is too big, each row
// split the same way along the next such dimension. Runs hold whole bytes (k rows with k * row
// bits a multiple of 8), so a few rows of a sub-byte dtype may exceed the budget.
void split_units(size_t item, std::vector<SliceIndex>& s, size_t from, uint64_t bits,
                 uint64_t budget, std::vector<Unit>& out) {
  uint64_t elements = 1;
  for (const SliceIndex& e : s) elements *= count_of(e);
  size_t d = from;
  while (d < s.size() && count_of(s[d]) < 2) ++d;  // an index, or a range of one, is one row
  const uint64_t bytes = elements * bits / 8;
  if (bytes <= budget || d == s.size()) {
    out.push_back({item, s, bytes});
    return;
  }
  const uint64_t rows = count_of(s[d]);
  const uint64_t row_bits = elements / rows * bits;
  const SliceIndex whole = s[d];
  if (row_bits % 8 == 0 && row_bits / 8 > budget) {
    for (uint64_t r = 0; r < rows; ++r) {
      s[d] = SliceIndex::range(whole.start + r, whole.start + r + 1);
      split_units(item, s, d + 1, bits, budget, out);
    }
  } else {
    const uint64_t step = 8 / std::gcd(row_bits, uint64_t{8});
    const uint64_t per = std::max(step, budget * 8 / row_bits / step * step);
    for (uint64_t r = 0; r < rows; r += per) {
      const uint64_t n = std::min(per, rows - r);
      s[d] = SliceIndex::range(whole.start + r, whole.start + r + n);
      out.push_back({item, s, n * row_bits / 8});
    }
  }
  s[d] = whole;
}

// Destinations start on this boundary, so a dequantized item's values are aligned.
constexpr uint64_t kUnitAlignment = 64;
uint64_t aligned_size(uint64_t n) {
  return (n + kUnitAlignment - 1) / kUnitAlignment * kUnitAlignment;
}

// The smallest --max-memory: smaller batches only multiply the units and reads. The largest
// keeps budget * 8 (bits) in range.
constexpr uint64_t kMinBatchBytes = 1024;
constexpr uint64_t kMaxBatchBytes = uint64_t{1} << 56;

// Why an argument names nothing, with what it may have meant.
std::string not_found_message(const ReadPlan& plan, const SliceArg& arg, bool keep_packed) {
  std::string hint;
  if (arg.text != arg.name && plan.find(arg.text)) {
    hint = fmt::format("; the tensor {} is named with brackets: '{}[]'", display_name(arg.text),
                       arg.text);
  } else if (!keep_packed) {
    for (const PlanTensor& t : plan.tensors())
      if (t.quantized && arg.name.size() > t.name.size() && arg.name.starts_with(t.name) &&
          arg.name[t.name.size()] == '.')
        hint = fmt::format(
            "; it is stored as part of the quantized weight {}: name that, or pass "
            "--keep-packed to slice what is stored",
            display_name(t.name));
  } else {
    for (const PlanTensor& t : plan.tensors())
      if (t.name.size() > arg.name.size() && t.name.starts_with(arg.name) &&
          t.name[arg.name.size()] == '.') {
        hint =
            fmt::format("; with --keep-packed a quantized weight is its stored tensors ({}, ...)",
                        display_name(t.name));
        break;
      }
  }
  if (hint.empty()) {
    std::vector<std::string> names;
    for (const PlanTensor& t : plan.tensors()) names.push_back(t.name);
    if (const std::string near = tlio::closest_name(arg.name, names); !near.empty())
      hint = fmt::format("; did you mean {}?", display_name(near));
  }
  return fmt::format("no tensor {} in {}{}", display_name(arg.name), plan.name(), hint);
}

struct SliceArgs {
  std::string source, out, dtype, max_inflight, max_memory;
  std::vector<std::string> tensors;
  bool keep_packed = false, dry_run = false, json = false;
};

// What a slice did, or would do: what the summary line, --dry-run and --json show.
struct SliceSummary {
  struct Item {
    std::string name;
    Dtype dtype;
    std::vector<uint64_t> shape;
    uint64_t bytes;
    bool decoded;  // dequantized, or decoded from a GGUF block type
  };
  std::string input;
  std::vector<std::string> files;
  std::vector<Item> items;
  std::vector<PlannedRead> reads;                       // listed for --json only
  std::vector<std::pair<uint64_t, uint64_t>> per_file;  // reads, bytes
  uint64_t read_bytes = 0, wanted_bytes = 0;

  void count_read(const PlannedRead& r, bool keep) {
    if (keep) reads.push_back(r);
    ++per_file[r.file].first;
    per_file[r.file].second += r.length;
    read_bytes += r.length;
  }
};

// The dtype --dtype names, when given.
std::optional<Dtype> dequantized_dtype(const SliceArgs& a) {
  return a.dtype.empty() ? std::nullopt : parse_dtype_alias(a.dtype);
}

uint64_t batch_bytes_of(const SliceArgs& a) {
  const uint64_t batch_bytes = a.max_memory.empty()
                                   ? kDefaultBatchBytes
                                   : std::min(parse_size(a.max_memory), kMaxBatchBytes);
  if (batch_bytes < kMinBatchBytes)
    throw UsageError(fmt::format("slice: --max-memory must be at least {} bytes", kMinBatchBytes));
  return batch_bytes;
}

void refuse_unused_dtype(const SliceArgs& a, const SliceSummary& s) {
  if (!a.dtype.empty() &&
      std::none_of(s.items.begin(), s.items.end(), [](const auto& it) { return it.decoded; }))
    throw UsageError(
        "slice: --dtype sets what quantized weights dequantize to, and none is named "
        "(stored tensors are copied as they are; `tlio convert --dtype` converts)");
}

// A safetensors file, a folder or a URL of one: through a read plan, in batches.
SliceSummary slice_through_plan(const SliceArgs& a) {
  ReadPlanOptions options;
  options.open = open_options();
  options.keep_packed = a.keep_packed;
  if (!a.max_inflight.empty()) options.max_inflight_bytes = parse_size(a.max_inflight);
  const uint64_t batch_bytes = batch_bytes_of(a);
  ReadPlan plan = ReadPlan::open(a.source, options);
  const std::optional<Dtype> as = dequantized_dtype(a);
  SliceSummary s{plan.name(), plan.file_names(), {}, {}, {}, 0, 0};
  s.per_file.resize(s.files.size());

  // Every argument checked, and every item's shape known, before a byte is read.
  std::vector<std::vector<SliceIndex>> slices;  // one entry per dimension of the tensor
  std::set<std::string> seen;
  for (const std::string& text : a.tensors) {
    const SliceArg arg = split_slice_arg(text);
    const PlanTensor* t = plan.find(arg.name);
    if (!t) throw UsageError(not_found_message(plan, arg, a.keep_packed));
    if (!seen.insert(arg.name).second)
      throw UsageError(fmt::format("{} is named twice (the output has one tensor of each name)",
                                   display_name(arg.name)));
    std::vector<SliceIndex> slice = plan_indices(arg, t->name, {t->shape.begin(), t->shape.end()});
    const size_t item =
        plan.add(arg.name, slice, t->quantized ? as : std::nullopt);  // before items(): it grows
    const PlanItem& it = plan.items()[item];
    s.items.push_back({it.name, it.dtype, it.shape, it.byte_size, t->quantized});
    slices.push_back(std::move(slice));
  }
  plan.clear();
  refuse_unused_dtype(a, s);

  std::optional<Writer> writer;
  if (!a.dry_run) {
    writer.emplace(Writer::to_file(a.out));
    for (const auto& it : s.items) writer->declare(it.name, it.dtype, Shape(it.shape));
  }
  std::vector<std::byte> buffer;
  ProgressBar bar("slicing");
  uint64_t total = 0, done = 0;
  for (const auto& it : s.items) total += it.bytes;
  // Units are made item by item and read in batches of at most batch_bytes (one unit may be
  // more), destinations aligned.
  std::vector<Unit> batch, units;
  uint64_t batch_size = 0;
  const auto read_batch = [&] {
    plan.clear();
    for (const Unit& u : batch)
      plan.add(s.items[u.item].name, u.slice, s.items[u.item].decoded ? as : std::nullopt);
    for (const PlannedRead& r : plan.reads()) s.count_read(r, a.json);
    s.wanted_bytes += plan.wanted_bytes();
    if (writer) {
      buffer.resize(batch_size);
      uint64_t at = 0;
      for (size_t k = 0; k < batch.size(); ++k) {
        plan.set_destination(k, {buffer.data() + at, batch[k].bytes});
        at += aligned_size(batch[k].bytes);
      }
      plan.execute();
      at = 0;
      for (const Unit& u : batch) {
        writer->append(s.items[u.item].name, {buffer.data() + at, u.bytes});
        at += aligned_size(u.bytes);
        done += u.bytes;
      }
      bar.update(done, total);
    }
    batch.clear();
    batch_size = 0;
  };
  for (size_t i = 0; i < s.items.size(); ++i) {
    units.clear();
    split_units(i, slices[i], 0, dtype_bits(s.items[i].dtype), batch_bytes, units);
    for (Unit& u : units) {
      if (!batch.empty() && batch_size + aligned_size(u.bytes) > batch_bytes) read_batch();
      batch_size += aligned_size(u.bytes);
      batch.push_back(std::move(u));
    }
  }
  if (!batch.empty()) read_batch();
  bar.finish();
  plan.clear();
  if (writer) writer->commit();
  return s;
}

// A GGUF file (or split set): plain tensors (F32, F16, ...) sliced as stored, block types
// decoded (--dtype, default F32), only the blocks each slice touches read (GgufFile::read_slice),
// a unit of at most --max-memory output bytes at a time.
SliceSummary slice_gguf(const SliceArgs& a) {
  if (a.keep_packed)
    throw UsageError(
        "slice: --keep-packed is for safetensors' quantized weights; a GGUF's block types "
        "(Q4_K, ...) have no safetensors dtype, so their slices are decoded (--dtype)");
  const uint64_t batch_bytes = batch_bytes_of(a);
  const GgufFile f = GgufFile::open(a.source, open_options());
  const Dtype decoded_as = dequantized_dtype(a).value_or(Dtype::F32);
  SliceSummary s{f.name(), {}, {}, {}, {}, 0, 0};
  for (size_t i = 0; i < f.splits(); ++i) s.files.push_back(f.split_name(i));
  s.per_file.resize(s.files.size());

  std::vector<const GgufTensorInfo*> tensors;
  std::vector<std::vector<SliceIndex>> slices;
  std::set<std::string> seen;
  for (const std::string& text : a.tensors) {
    const SliceArg arg = split_slice_arg(text);
    const GgufTensorInfo* t = f.tensor(arg.name);
    if (!t) {
      std::vector<std::string> names;
      for (const GgufTensorInfo& x : f.tensors()) names.push_back(x.name);
      const std::string near = closest_name(arg.name, names);
      const bool hf_name = arg.name.starts_with("model.") || arg.name.starts_with("lm_head.");
      throw UsageError(fmt::format(
          "no tensor {} in {}{}", display_name(arg.name), f.name(),
          !near.empty() ? fmt::format("; did you mean {}?", display_name(near))
          : hf_name
              ? "; a GGUF names tensors as llama.cpp does (blk.0.ffn_up.weight, token_embd.weight: "
                "`tlio inspect` lists them)"
              : ""));
    }
    if (!seen.insert(arg.name).second)
      throw UsageError(fmt::format("{} is named twice (the output has one tensor of each name)",
                                   display_name(arg.name)));
    const std::optional<Dtype> plain = ggml_plain_dtype(t->type);
    if (!plain && !ggml_decodes(t->type))
      throw Error(ErrorCode::unsupported, Rule::gguf, t->name, std::nullopt,
                  fmt::format("tensor {} is {}, a ggml type tlio does not decode", t->name,
                              ggml_type(t->type)->name),
                  f.name());
    std::vector<SliceIndex> slice = plan_indices(arg, t->name, t->shape());
    const Dtype dtype = plain.value_or(decoded_as);
    const std::vector<uint64_t> shape = f.plan_slice(*t, slice).shape;
    uint64_t elements = 1;
    for (uint64_t d : shape) elements *= d;
    s.items.push_back({t->name, dtype, shape, elements * dtype_bits(dtype) / 8, !plain});
    tensors.push_back(t);
    slices.push_back(std::move(slice));
  }
  refuse_unused_dtype(a, s);
  // The units each item is read in, and their reads (a block at a unit's edge is read by both).
  std::vector<std::vector<Unit>> units(s.items.size());
  for (size_t i = 0; i < s.items.size(); ++i) {
    split_units(i, slices[i], 0, dtype_bits(s.items[i].dtype), batch_bytes, units[i]);
    for (const Unit& u : units[i]) {
      const SlicePlan where = f.plan_slice(*tensors[i], u.slice);
      for (const ByteRange& r : where.ranges)
        s.count_read({tensors[i]->split, tensors[i]->offset + r.offset, r.length}, a.json);
      s.wanted_bytes += where.byte_size;
    }
  }
  if (a.dry_run) return s;

  Writer writer = Writer::to_file(a.out);
  for (const auto& it : s.items) writer.declare(it.name, it.dtype, Shape(it.shape));
  ProgressBar bar("slicing");
  uint64_t total = 0, done = 0;
  for (const auto& it : s.items) total += it.bytes;
  std::vector<std::byte> buffer;
  for (size_t i = 0; i < s.items.size(); ++i) {
    for (const Unit& u : units[i]) {
      buffer.resize(u.bytes);
      f.read_slice(*tensors[i], u.slice, s.items[i].dtype, buffer);
      writer.append(s.items[i].name, buffer);
      bar.update(done += u.bytes, total);
    }
  }
  bar.finish();
  writer.commit();
  return s;
}

void print_summary(const SliceArgs& a, const SliceSummary& s) {
  if (a.json) {
    std::string tensors, read_list, files;
    for (size_t i = 0; i < s.items.size(); ++i)
      tensors += fmt::format(
          "{}{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"bytes\":{},\"quantized\":{}}}",
          i ? "," : "", json_string(s.items[i].name), dtype_name(s.items[i].dtype),
          fmt::join(s.items[i].shape, ","), s.items[i].bytes,
          s.items[i].decoded ? "true" : "false");
    for (size_t i = 0; i < s.reads.size(); ++i)
      read_list += fmt::format("{}{{\"file\":{},\"offset\":{},\"length\":{}}}", i ? "," : "",
                               s.reads[i].file, s.reads[i].offset, s.reads[i].length);
    for (size_t i = 0; i < s.files.size(); ++i) files += (i ? "," : "") + json_string(s.files[i]);
    fmt::print(
        "{{\"input\":{},\"output\":{},\"dry_run\":{},\"files\":[{}],\"tensors\":[{}],"
        "\"reads\":[{}],\"bytes_read\":{},\"bytes_wanted\":{}}}\n",
        json_string(display_location(s.input)),
        a.out.empty() ? "null" : json_string(display_location(a.out)), a.dry_run, files, tensors,
        read_list, s.read_bytes, s.wanted_bytes);
    return;
  }
  std::FILE* out = a.dry_run ? stdout : report_stream(a.out);
  if (a.dry_run) {
    size_t name_width = 6;
    for (const auto& it : s.items)
      name_width = std::max(name_width, display_width(display_name(it.name)));
    fmt::print(out, "{}  {:<8}  {:<16}  {}\n", pad("tensor", name_width), "dtype", "shape",
               "bytes");
    for (const auto& it : s.items)
      fmt::print(out, "{}  {:<8}  {:<16}  {}{}\n", pad(display_name(it.name), name_width),
                 dtype_name(it.dtype), shape_text(it.shape), thousands(it.bytes),
                 it.decoded ? " (dequantized)" : "");
    for (size_t f = 0; f < s.per_file.size(); ++f)
      if (const auto [n, bytes] = s.per_file[f]; n)
        fmt::print(out, "{}: {} read{}, {} bytes\n", s.files[f], n, n == 1 ? "" : "s",
                   thousands(bytes));
  }
  fmt::print(out, "{}{}: {} tensor{}, {} bytes {} ({} wanted){}\n", display_location(s.input),
             a.dry_run ? "" : " -> " + display_location(a.out), s.items.size(),
             s.items.size() == 1 ? "" : "s", thousands(s.read_bytes),
             a.dry_run ? "to read" : "read", thousands(s.wanted_bytes),
             a.dry_run ? "; nothing read, nothing written" : "");
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
      "shards), a GGUF file (its block types, Q4_K ..., decoded as quantized weights are; F32,\n"
      "F16 and BF16 tensors sliced as stored) or a URL of one. The output is canonical, without\n"
      "metadata; each tensor keeps its name.\n"
      "--dry-run lists the tensors and the reads without reading them.\n\n"
      "Examples:\n"
      "  tlio slice model/ 'model.embed_tokens.weight[0:8000]' -o shard0.safetensors\n"
      "  tlio slice model.safetensors 'lm_head.weight[:, 0:2048]' 'norm.weight' -o part.safetensors\n"
      "  tlio slice hf://org/model 'layers.0.mlp.up_proj.weight[0:1024]' --dry-run --json\n"
      "  tlio slice model.gguf 'token_embd.weight[0:100]' --dtype BF16 -o rows.safetensors");
  auto a = std::make_shared<SliceArgs>();
  cmd->add_option("SOURCE", a->source,
                  "File, folder of weights, GGUF file, or URL (http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("TENSOR[SLICE]", a->tensors, "e.g. 'w[0:1024]', 'w[:, -512:]', 'w[3]', 'bias'")
      ->required()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              parse_slice_spec(split_slice_arg(v).spec);
            } catch (const UsageError& e) {
              return "'" + v + "': " + e.what();
            }
            return {};
          },
          ""));
  cmd->add_option("-o,--output", a->out, "Output file (or s3://, gs:// location; - for stdout)")
      ->type_name("PATH");
  offer_values(
      cmd->add_option("--dtype", a->dtype,
                      "What quantized weights dequantize to: F32, F16 or BF16 (default: F32; "
                      "bitsandbytes 4-bit: the dtype it was quantized from)"),
      kDequantizeDtypeNames)
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
  cmd->add_option(
         "--max-memory", a->max_memory,
         "Output bytes held at once; larger slices are read in runs of rows (default 256MiB)")
      ->check(size_check());
  cmd->add_flag("--dry-run", a->dry_run, "List the tensors and the reads; read and write nothing");
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"input\", \"output\", \"dry_run\", \"files\", "
      "\"tensors\": [{\"name\", \"dtype\", \"shape\", \"bytes\", \"quantized\"}], "
      "\"reads\": [{\"file\", \"offset\", \"length\"}], \"bytes_read\", \"bytes_wanted\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      if (a->out.empty() && !a->dry_run) throw UsageError("slice: -o OUT is needed (or --dry-run)");
      if (!a->out.empty() && !a->dry_run) check_stdout_output(a->out, a->json);
      if (a->keep_packed && !a->dtype.empty())
        throw UsageError(
            "slice: --dtype is for dequantized weights; --keep-packed copies them as stored");
      const bool gguf = tlio::weights_kind(a->source, open_options()) == tlio::WeightsKind::gguf;
      print_summary(*a, gguf ? slice_gguf(*a) : slice_through_plan(*a));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli
