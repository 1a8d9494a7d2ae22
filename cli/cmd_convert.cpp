// cli/cmd_convert.cpp: `tlio convert IN OUT [--dtype D] [--include REGEX] [--exclude REGEX]
// [--keep REGEX] [--drop REGEX] [--rename 'REGEX=REPLACEMENT'] [--json]`.
#include <fmt/core.h>
#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "gguf_listing.hpp"
#include "tlio/convert_file.hpp"
#include "tlio/edit.hpp"
#include "tlio/file.hpp"
#include "tlio/folder_rewrite.hpp"
#include "tlio/gguf.hpp"
#include "tlio/gguf_convert.hpp"
#include "tlio/model.hpp"
#include "tlio/rewrite.hpp"

namespace tlio::cli {

namespace {

// 'REGEX=REPLACEMENT' split at the first '=' that no backslash escapes (`\=` stays in the regex,
// where it means '=').
std::pair<std::string, std::string> split_rename(const std::string& rule) {
  for (size_t i = 0; i < rule.size(); ++i) {
    if (rule[i] == '\\') {
      ++i;
    } else if (rule[i] == '=') {
      return {rule.substr(0, i), rule.substr(i + 1)};
    }
  }
  return {rule, std::string(1, '\0')};  // no '=': refused by the check below
}

// What a report says of tie records the selection removed ("" for none).
std::string ties_note(size_t removed, size_t repointed) {
  std::string note;
  if (removed)
    note += fmt::format(", {} tie record{} ({{alias: tensor}} metadata) removed with {} tensor{}",
                        removed, removed == 1 ? "" : "s", removed == 1 ? "its" : "their",
                        removed == 1 ? "" : "s");
  if (repointed)
    note += fmt::format(", {} tied tensor{} left out written under {} kept alias{}", repointed,
                        repointed == 1 ? "" : "s", repointed == 1 ? "its" : "their",
                        repointed == 1 ? "" : "es");
  return note;
}

struct Args {
  std::string in, out, dtype, include, exclude, max_size, split_max_size;
  std::vector<std::string> keep, drop, rename;
  bool json = false, cast = false, allow_requantize = false, pure = false;
  JobOptions job;
};

// "; 3 values overflowed to inf (model.embed_tokens.weight), 2 flushed to zero (...)": what the
// target dtype could not hold, so that a lossy conversion is never silent.
std::string lost_note(const tlio::ConvertFileReport& r) {
  const tlio::LostValues total = r.lost_total();
  std::vector<std::string> over_names, flush_names;
  for (const tlio::LostValues& l : r.lost) {
    if (l.overflowed) over_names.push_back(l.tensor);
    if (l.flushed) flush_names.push_back(l.tensor);
  }
  const auto names = [](const std::vector<std::string>& v) {
    return v.size() <= 3 ? fmt::format("{}", fmt::join(v, ", "))
                         : fmt::format("{}, ... {} tensors",
                                       fmt::join(v.begin(), v.begin() + 3, ", "), v.size());
  };
  std::string note;
  if (total.overflowed)
    note += fmt::format("; {} value{} overflowed to inf ({})", total.overflowed,
                        total.overflowed == 1 ? "" : "s", names(over_names));
  if (total.flushed)
    note += fmt::format("; {} value{} flushed to zero ({})", total.flushed,
                        total.flushed == 1 ? "" : "s", names(flush_names));
  return note;
}

// ,"overflowed":N,"flushed":M,"lost":[{"tensor":...,"overflowed":...,"flushed":...}]
std::string lost_json(const tlio::ConvertFileReport& r) {
  const tlio::LostValues total = r.lost_total();
  std::vector<std::string> items;
  for (const tlio::LostValues& l : r.lost) {
    items.push_back(fmt::format("{{\"tensor\":{},\"overflowed\":{},\"flushed\":{}}}",
                                json_string(l.tensor), l.overflowed, l.flushed));
  }
  return fmt::format(",\"overflowed\":{},\"flushed\":{},\"lost\":[{}]", total.overflowed,
                     total.flushed, fmt::join(items, ","));
}

// ", 2 dequantized" when convert restored quantized weights.
std::string dequantized_note(const tlio::ConvertFileReport& r) {
  return r.dequantized ? fmt::format(", {} dequantized", r.dequantized) : "";
}

// A safetensors file or a model folder in (the library decides which): copied, or converted
// with --dtype; a folder's output is a folder, with the same shards unless --max-size.
int convert_safetensors(const Args& a, const tlio::TensorSelection& selection) {
  tlio::FolderFiles files;  // stays empty for a file
  const JobStep job(a.job);
  const tlio::FolderOptions how = folder_options(a.max_size, &files, job.get());
  tlio::ConvertFileReport r;
  {
    ProgressBar bar(a.dtype.empty() ? "copying" : "converting");
    auto progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
    if (a.dtype.empty()) {
      r = tlio::copy_weights(a.in, a.out, selection, progress, how);
    } else {
      tlio::ConvertFileOptions options;
      options.dtype = *tlio::parse_dtype_alias(a.dtype);
      options.include = a.include;
      options.exclude = a.exclude;
      options.tensors = selection;
      options.progress = progress;
      options.cast = a.cast;
      r = tlio::convert_weights(a.in, a.out, options, how);
    }
    bar.finish();
  }
  if (job.print(a.out, a.json)) return kExitOk;
  const std::string dtype =
      a.dtype.empty() ? "" : std::string(tlio::dtype_name(*tlio::parse_dtype_alias(a.dtype)));
  // Standard input by the name its File gives it, as every report of a read names it.
  const std::string in = tlio::is_standard_stream(a.in) ? "<stdin>" : display_location(a.in);
  const std::string out = display_location(a.out);
  if (a.json) {
    fmt::print(
        "{{\"input\":{},\"output\":{},\"tensors\":{},\"dropped\":{},\"renamed\":{},"
        "\"converted\":{}{}{},\"data_bytes_in\":{},\"data_bytes_out\":{}{}{}}}\n",
        json_string(in), json_string(out), r.converted + r.kept, r.dropped, r.renamed, r.converted,
        dtype.empty() && files.empty() ? "" : fmt::format(",\"dequantized\":{}", r.dequantized),
        dtype.empty() ? "" : fmt::format(",\"dtype\":\"{}\"", dtype), r.data_bytes_in,
        r.data_bytes_out, dtype.empty() ? "" : lost_json(r), json_files_member(files));
    return kExitOk;
  }
  const std::string dropped = r.dropped ? fmt::format(", {} dropped", r.dropped) : "";
  const std::string renamed = r.renamed ? fmt::format(", {} renamed", r.renamed) : "";
  const std::string ties = ties_note(r.ties_removed, r.ties_repointed);
  if (!files.empty()) {
    fmt::print(
        "{} -> {}: {} file{}; {} tensor{}{}{}{}{}, {} -> {}{}\n", in, out, files.size(),
        files.size() == 1 ? "" : "s", r.converted + r.kept, r.converted + r.kept == 1 ? "" : "s",
        dtype.empty()
            ? ""
            : fmt::format(" ({} converted to {}{})", r.converted, dtype, dequantized_note(r)),
        dropped, renamed, ties, human_size(r.data_bytes_in), human_size(r.data_bytes_out),
        lost_note(r));
  } else if (dtype.empty()) {
    fmt::print(report_stream(a.out), "{} -> {}: {} tensor{}{}{}{}, {}\n", in, out, r.kept,
               r.kept == 1 ? "" : "s", r.dropped ? fmt::format(" ({} dropped)", r.dropped) : "",
               renamed, ties, human_size(r.data_bytes_out));
  } else {
    fmt::print(report_stream(a.out),
               "{} -> {}: {} tensor{} converted to {}{}, {} kept{}{}{}; {} -> {}{}\n", in, out,
               r.converted, r.converted == 1 ? "" : "s", dtype,
               r.dequantized ? fmt::format(" ({} dequantized)", r.dequantized) : "", r.kept,
               dropped, renamed, ties, human_size(r.data_bytes_in), human_size(r.data_bytes_out),
               lost_note(r));
  }
  return kExitOk;
}

// A GGUF file in: its tensors to a safetensors file, or its model to a Hugging Face folder, every
// block type decoded as ggml does.
int convert_from_gguf(const Args& a) {
  if (!a.include.empty() || !a.exclude.empty() || !a.keep.empty() || !a.drop.empty() ||
      !a.rename.empty() || !a.max_size.empty() || !a.job.id.empty() || !a.job.step.empty())
    throw UsageError("from a GGUF file, convert takes --dtype (F32, F16 or BF16) and --json only");
  // OUT.safetensors gets the tensors under their GGUF names; anything else is a folder.
  const bool folder = !a.out.ends_with(".safetensors");
  tlio::GgufImportOptions options;
  if (!a.dtype.empty()) options.dtype = *tlio::parse_dtype_alias(a.dtype);
  if (options.dtype != tlio::Dtype::F32 && options.dtype != tlio::Dtype::F16 &&
      options.dtype != tlio::Dtype::BF16)
    throw UsageError(fmt::format("from a GGUF file, --dtype is F32, F16 or BF16, not {}",
                                 tlio::dtype_name(options.dtype)));
  const tlio::GgufFile src = tlio::GgufFile::open(a.in, open_options());
  ProgressBar bar("decoding");
  options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
  const tlio::GgufImportReport r = folder ? tlio::import_gguf_model(src, a.out, options)
                                          : tlio::import_gguf(src, a.out, options);
  bar.finish();
  const std::string_view dtype = tlio::dtype_name(options.dtype);
  if (a.json) {
    std::vector<std::string> files;
    for (const std::string& f : r.files) files.push_back(json_string(f));
    fmt::print(
        "{{\"input\":{},\"output\":{},\"tensors\":{},\"decoded\":{},\"converted\":{},\"kept\":{},"
        "\"dtype\":\"{}\",{}\"data_bytes_in\":{},\"data_bytes_out\":{}}}\n",
        json_string(display_location(a.in)), json_string(display_location(a.out)), r.tensors,
        r.decoded, r.converted, r.kept, dtype,
        folder ? fmt::format("\"files\":[{}],\"tokenizer_note\":{},", fmt::join(files, ","),
                             json_string(r.tokenizer_note))
               : fmt::format("\"metadata_kept\":{},\"metadata_skipped\":{},", r.metadata_kept,
                             r.metadata_skipped),
        r.data_bytes_in, r.data_bytes_out);
    return kExitOk;
  }
  if (folder) {
    fmt::print("{} -> {}: {} tensor{} ({} decoded to {}, {} converted, {} kept), {}; {} -> {}\n",
               display_location(a.in), a.out, r.tensors, r.tensors == 1 ? "" : "s", r.decoded,
               dtype, r.converted, r.kept, fmt::join(r.files, ", "), human_size(r.data_bytes_in),
               human_size(r.data_bytes_out));
    if (!r.tokenizer_note.empty())
      fmt::print(stderr, "tlio: no tokenizer.json: {}\n", r.tokenizer_note);
    return kExitOk;
  }
  fmt::print(
      "{} -> {}: {} tensor{} ({} decoded to {}, {} converted, {} kept); {} metadata key{} kept, {} array{} "
      "left out; {} -> {}\n",
      display_location(a.in), a.out, r.tensors, r.tensors == 1 ? "" : "s", r.decoded, dtype,
      r.converted, r.kept, r.metadata_kept, r.metadata_kept == 1 ? "" : "s", r.metadata_skipped,
      r.metadata_skipped == 1 ? "" : "s", human_size(r.data_bytes_in),
      human_size(r.data_bytes_out));
  return kExitOk;
}

// A Hugging Face folder in, a .gguf out: llama.cpp's file, its weights in --dtype (default F16);
// or a GGUF in, requantized as llama-quantize does.
int convert_to_gguf(const Args& a) {
  if (!a.include.empty() || !a.exclude.empty() || !a.keep.empty() || !a.drop.empty() ||
      !a.rename.empty() || !a.max_size.empty() || !a.job.id.empty() || !a.job.step.empty())
    throw UsageError("to a GGUF file, convert takes --dtype, --split-max-size and --json only");
  tlio::GgufExportOptions options;
  options.open = open_options();
  options.allow_requantize = a.allow_requantize;
  options.pure = a.pure;
  if (!a.dtype.empty()) {
    const std::optional<tlio::Dtype> d = tlio::parse_dtype_alias(a.dtype);
    options.type = d ? std::string(tlio::dtype_name(*d)) : a.dtype;
  }
  if (!a.split_max_size.empty()) {
    options.split_max_size = tlio::parse_size(a.split_max_size);
    if (options.split_max_size == 0) throw UsageError("--split-max-size must be more than 0");
  }
  ProgressBar bar(tlio::weights_kind(a.in, options.open) == tlio::WeightsKind::gguf ? "requantizing"
                                                                                    : "exporting");
  options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
  const tlio::GgufExportReport r = tlio::export_gguf(a.in, a.out, options);
  bar.finish();
  std::vector<std::string> types, types_json, fallbacks_json;
  for (const auto& [type, n] : r.type_counts) {
    types.push_back(fmt::format("{} {}", n, type));
    types_json.push_back(fmt::format("{}:{}", json_string(type), n));
  }
  for (const std::string& f : r.fallbacks) fallbacks_json.push_back(json_string(f));
  if (a.json) {
    std::vector<std::string> files;
    for (const std::string& f : r.files) files.push_back(json_string(display_location(f)));
    fmt::print(
        "{{\"input\":{},\"output\":{},\"architecture\":{},\"tensors\":{},\"types\":{{{}}},"
        "\"fallbacks\":[{}],\"files\":[{}],\"data_bytes_in\":{},\"bytes_out\":{}}}\n",
        json_string(display_location(a.in)), json_string(display_location(a.out)),
        json_string(r.architecture), r.tensors, fmt::join(types_json, ","),
        fmt::join(fallbacks_json, ","), fmt::join(files, ","), r.bytes_in, r.bytes_out);
    return kExitOk;
  }
  fmt::print(report_stream(a.out), "{} -> {}: {}, {} tensor{} ({}); {} -> {}\n",
             display_location(a.in), display_location(a.out), r.architecture, r.tensors,
             r.tensors == 1 ? "" : "s", fmt::join(types, ", "), human_size(r.bytes_in),
             human_size(r.bytes_out));
  for (const std::string& f : r.fallbacks) fmt::print(report_stream(a.out), "  fell back: {}\n", f);
  if (r.files.size() > 1)
    fmt::print(report_stream(a.out), "  in {} files: {} ... {}\n", r.files.size(),
               display_location(r.files.front()), display_location(r.files.back()));
  return kExitOk;
}

}  // namespace

void add_convert(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "convert", "Rewrite a file canonically: other dtypes, fewer tensors, new names");
  cmd->footer(
      "Without --dtype the tensors are copied as they are (in the kernel). With --dtype,\n"
      "floating tensors are converted (rounding to nearest even); integer and BOOL tensors and\n"
      "the companions of quantized weights are copied. --include/--exclude choose which are\n"
      "converted, by regex search on names.\n"
      "--keep/--drop choose which tensors are written and --rename 'REGEX=REPLACEMENT' renames\n"
      "them (each repeatable; \\1 inserts a group; keep and drop see the original names; rules\n"
      "run in order). A quantized weight moves whole: keep and drop decide by its logical name,\n"
      "and its stored tensors are renamed together. Two tensors renamed to one name is an error.\n"
      "OUT may be IN itself: the new file replaces it atomically. IN may be a model folder\n"
      "(shards with their index): OUT is then a folder with the same shards, a new index, and\n"
      "config.json (its dtype set), tokenizer and generation files carried over.\n"
      "IN may be a GGUF file (llama.cpp's): OUT.safetensors gets its tensors under their GGUF\n"
      "names, each ggml type decoded exactly as ggml does, as --dtype F32, F16 or BF16 (default\n"
      "BF16); its numbers and strings become metadata. Any other OUT is a Hugging Face folder:\n"
      "model.safetensors under the Hugging Face names (Q/K rows put back), config.json,\n"
      "tokenizer.json (byte-level BPE and SentencePiece vocabularies), tokenizer_config.json,\n"
      "generation_config.json.\n"
      "OUT a .gguf file: the model folder IN (Llama, Mistral, Mixtral, Qwen2, Qwen2-MoE, Qwen3,\n"
      "Qwen3-MoE, OLMo-2, Granite, Phi-3, Gemma 2, Gemma 3, gpt-oss, DeepSeek-V2/V3, as llama.cpp's\n"
      "converter writes them, gpt-oss's MXFP4 experts copied as MXFP4 whatever --dtype says;\n"
      "a byte-level BPE tokenizer.json or a SentencePiece vocabulary: tokenizer.model, or\n"
      "tokenizer.json with byte fallback) as llama.cpp loads it, the 2-D weights as --dtype F32,\n"
      "F16 (default), BF16, or one of llama-quantize's file types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,\n"
      "Q2_K, Q3_K_S, Q3_K_M (Q3_K), Q3_K_L, Q4_K_S, Q4_K_M (Q4_K), Q5_K_S, Q5_K_M (Q5_K), Q6_K:\n"
      "each weight the type llama-quantize gives it (Q4_0's output.weight Q6_K, ...; --pure: the\n"
      "base type everywhere), byte for byte what ggml's reference quantizers write; norms, biases\n"
      "and routers F32. --split-max-size SIZE\n"
      "writes llama.cpp's split files (OUT-00001-of-0000N.gguf, llama.cpp loads the first).\n"
      "A GGUF IN to a .gguf OUT is requantized as llama-quantize does: its weights in --dtype\n"
      "(a type or a mix), decoded as ggml decodes them; --allow-requantize for weights that are\n"
      "quantized already (quality is lost twice).\n\n"
      "Examples:\n  tlio convert old.safetensors canonical.safetensors\n"
      "  tlio convert model.safetensors model-bf16.safetensors --dtype bf16 --exclude norm\n"
      "  tlio convert model.safetensors encoder.safetensors --keep '^encoder\\.' \\\n"
      "      --rename '^encoder\\.(.*)=\\1'\n"
      "  tlio convert model-Q4_K_M.gguf model.safetensors --dtype f32\n"
      "  tlio convert Qwen3-0.6B/ qwen3-0.6b-q4_k_m.gguf --dtype q4_k_m\n"
      "  tlio convert model-f16.gguf model-q4_k_m.gguf --dtype q4_k_m");
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in,
                  "Input file or model folder, or its URL (http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("OUT", a->out, "Output file, or folder for a folder (or s3://, gs:// location)")
      ->required();
  offer_values(cmd->add_option("--dtype", a->dtype,
                               "Target floating dtype: F32, F16, BF16, F64, F8_E4M3, F8_E5M2, ... "
                               "(also bf16, float16, float8_e4m3fn, ...)"),
               convert_dtype_names())
      ->check(convert_dtype_check(true));
  auto* include = cmd->add_option("--include", a->include, "Convert only tensors matching REGEX")
                      ->check(regex_check());
  auto* exclude = cmd->add_option("--exclude", a->exclude, "Do not convert tensors matching REGEX")
                      ->check(regex_check());
  include->needs(cmd->get_option("--dtype"));
  exclude->needs(cmd->get_option("--dtype"));
  cmd->add_option("--keep", a->keep, "Write only tensors matching REGEX (repeatable: any of them)")
      ->check(regex_check());
  cmd->add_option("--drop", a->drop, "Leave out tensors matching REGEX (repeatable)")
      ->check(regex_check());
  cmd->add_option("--rename", a->rename, "Rename by 'REGEX=REPLACEMENT' (repeatable, in order)")
      ->check([](const std::string& v) -> std::string {
        auto [regex, replacement] = split_rename(v);
        if (replacement == std::string(1, '\0'))
          return "expected 'REGEX=REPLACEMENT', got '" + v + "'";
        return regex_check()(regex);
      });
  add_max_size_option(cmd, a->max_size);
  add_job_options(cmd, a->job);
  cmd->add_option(
         "--split-max-size", a->split_max_size,
         "A .gguf OUT in llama.cpp's split files of at most SIZE tensor bytes each (5GB, 500MiB, ...)")
      ->check(size_check());
  cmd->add_flag("--pure", a->pure,
                "A .gguf OUT: every weight in --dtype's base type, as llama-quantize --pure (no "
                "tensor given more bits by the file type's rules)");
  cmd->add_flag("--allow-requantize", a->allow_requantize,
                "A GGUF IN to a .gguf OUT: requantize weights quantized already (quality is "
                "lost twice), as llama-quantize --allow-requantize");
  cmd->add_flag(
         "--cast", a->cast,
         "A model folder to a --dtype of 8 bits or fewer: cast every tensor selected, with no scale "
         "(without it refused: quantize --scheme fp8-block writes scaled FP8)")
      ->needs(cmd->get_option("--dtype"));
  cmd->add_flag("--json", a->json, "One JSON document on stdout");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      check_stdout_output(a->out, a->json);
      if (a->out.ends_with(".gguf")) return convert_to_gguf(*a);
      if (!a->split_max_size.empty())
        throw UsageError(
            "--split-max-size splits a .gguf OUT (--max-size re-shards a folder's output)");
      if (!a->dtype.empty() && !tlio::parse_dtype_alias(a->dtype))
        throw UsageError(
            fmt::format("--dtype {} is a GGUF type: OUT is then a .gguf file", a->dtype));
      if (tlio::weights_kind(a->in, open_options()) == tlio::WeightsKind::gguf)
        return convert_from_gguf(*a);
      tlio::TensorSelection selection;
      selection.keep = a->keep;
      selection.drop = a->drop;
      for (const std::string& r : a->rename) selection.rename.push_back(split_rename(r));
      return convert_safetensors(*a, selection);
    });
  });
}

}  // namespace tlio::cli
