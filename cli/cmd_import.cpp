// cli/cmd_import.cpp: `tlio import SRC DST [--key PATH] [--skip-unsupported]`: a PyTorch
// checkpoint (zip or legacy, or a distributed checkpoint's folder) to safetensors, with no
// pickle ever executed.
#include <fmt/core.h>
#include <fmt/format.h>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/checkpoint.hpp"
#include "tlio/model.hpp"

namespace tlio::cli {

void add_import(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("import",
                                 "Convert a PyTorch checkpoint to safetensors (no pickle is run)");
  // SRC DST [--key PATH] [--max-size SIZE] [--skip-unsupported]
  cmd->footer(
      "SRC is a torch.save file (.bin, .pt, .pth, .ckpt): the zip format or the legacy one of\n"
      "torch < 1.6; or a directory with pytorch_model.bin, or shards and\n"
      "pytorch_model.bin.index.json: then DST is a model directory (model.safetensors or shards\n"
      "with model.safetensors.index.json; config and tokenizer files copied); or a\n"
      "torch.distributed.checkpoint (DCP) folder (.metadata and __R_N.distcp files): each tensor\n"
      "assembled from the chunks its ranks saved, into a model directory.\n"
      "Its pickle is decoded, never run: tensors are rebuilt from their storages,\n"
      "other objects stay inert, and a pickle naming code that torch.load would run (os.system,\n"
      "builtins.eval, ...) is refused. Tensors are named by their path in the object (dict keys\n"
      "and list indices joined with '.'); a top-level 'state_dict' dict is taken when present.\n"
      "Exact aliases are written once and recorded in the metadata as {dropped: kept}.\n\n"
      "Examples:\n  tlio import pytorch_model.bin model.safetensors\n"
      "  tlio import last.ckpt encoder.safetensors --key model.encoder\n"
      "  tlio import llama-7b-hf/ llama-7b-st/ --max-size 5GB\n"
      "  tlio import checkpoints/step-1000/ model/ --max-size 5GB    (a DCP folder)");
  struct Args {
    std::string src, dst, key, max_size, dtype;
    JobOptions job;
    bool skip_unsupported = false, allow_empty = false, json = false, all = false, verbose = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("SRC", a->src,
                  "PyTorch checkpoint (a file or URL), model directory or DCP folder")
      ->required();
  cmd->add_option("DST", a->dst, "Output safetensors file or directory (or s3://, gs:// location)")
      ->required();
  add_remote_options(cmd, false);
  cmd->add_option("--key", a->key, "Import the sub-object at this path (a.b.0) instead");
  cmd->add_option("--max-size", a->max_size,
                  "Directories: split the weights into shards of at most SIZE (5GB, 500MiB, ...); "
                  "default: as the source was split")
      ->check(size_check());
  add_job_options(cmd, a->job);
  offer_values(
      cmd->add_option("--dtype", a->dtype,
                      "Write floating tensors in this dtype (F16, BF16, ...; as convert --dtype); "
                      "integer tensors as they are"),
      [] {
        std::vector<std::string> names = convert_dtype_names();  // whole-byte ones
        std::erase_if(
            names, [](const std::string& n) { return tlio::is_sub_byte(*tlio::parse_dtype(n)); });
        return names;
      }())
      ->check(convert_dtype_check());
  cmd->add_flag(
      "--skip-unsupported", a->skip_unsupported,
      "Leave out tensors safetensors cannot hold (complex128, quantized, sparse), with a note");
  cmd->add_flag("--allow-empty", a->allow_empty,
                "Write a file without tensors when the checkpoint has none (else an error)");
  cmd->add_flag(
      "--all", a->all,
      "A training checkpoint: import every tensor (optimizer state too), not its model part");
  cmd->add_flag("-v,--verbose", a->verbose, "List every value left out (not a tensor) by its path");
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"input\", \"output\", \"format\", \"tensors\", "
      "\"tensors_written\", \"converted\", \"dtype\", \"bytes_written\", \"aliases\", \"dropped_values\", \"dropped\", \"skipped\", \"chosen_key\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      check_stdout_output(a->dst, a->json);
      tlio::ImportOptions options;
      options.key = a->key;
      options.skip_unsupported = a->skip_unsupported;
      options.allow_empty = a->allow_empty;
      options.import_all = a->all;
      if (!a->max_size.empty()) options.max_shard_size = tlio::parse_size(a->max_size);
      if (!a->dtype.empty()) options.dtype = tlio::parse_dtype_alias(a->dtype);
      const JobStep job(a->job);
      options.job = job.get();
      ProgressBar bar("importing");
      options.progress = [&bar](uint64_t done, uint64_t total) { bar.update(done, total); };
      const tlio::ImportReport r = tlio::import_checkpoint(a->src, a->dst, options);
      bar.finish();
      if (job.print(a->dst, a->json)) return kExitOk;
      const size_t aliases = r.contents.tensors.size() - r.tensors_written;
      if (a->json) {
        std::vector<std::string> tensors, skipped;
        for (const auto& t : r.contents.tensors)
          tensors.push_back(
              fmt::format("{{\"name\":{},\"dtype\":\"{}\",\"shape\":[{}],\"alias_of\":{}}}",
                          json_string(t.name), tlio::dtype_name(t.dtype), fmt::join(t.shape, ","),
                          t.alias_of.empty() ? "null" : json_string(t.alias_of)));
        for (const std::string& note : r.contents.skipped) skipped.push_back(json_string(note));
        std::vector<std::string> dropped;
        for (const tlio::DroppedValue& d : r.contents.dropped)
          dropped.push_back(
              fmt::format("{{\"path\":{},\"kind\":{}}}", json_string(d.path), json_string(d.kind)));
        fmt::print(
            "{{\"input\":{},\"output\":{},\"format\":{},\"tensors\":[{}],\"tensors_written\":{},"
            "\"converted\":{},\"dtype\":{},\"bytes_written\":{},\"aliases\":{},\"dropped_values\":{},\"dropped\":[{}],"
            "\"skipped\":[{}],\"chosen_key\":{}}}\n",
            json_string(display_location(a->src)), json_string(display_location(a->dst)),
            json_string(r.contents.format), fmt::join(tensors, ","), r.tensors_written,
            r.tensors_converted,
            options.dtype ? json_string(tlio::dtype_name(*options.dtype)) : "null", r.bytes_written,
            aliases, r.contents.dropped_values, fmt::join(dropped, ","), fmt::join(skipped, ","),
            r.contents.chosen_key.empty() ? "null" : json_string(r.contents.chosen_key));
        return kExitOk;
      }
      for (const std::string& note : r.contents.skipped) fmt::print(stderr, "skipped: {}\n", note);
      if (a->verbose) {
        for (const tlio::DroppedValue& d : r.contents.dropped)
          fmt::print(stderr, "dropped: {} ({})\n",
                     d.path.empty() ? "(the top level)" : display_name(d.path), d.kind);
        if (r.contents.dropped.size() < r.contents.dropped_values)
          fmt::print(stderr, "dropped: ... and {} more\n",
                     r.contents.dropped_values - r.contents.dropped.size());
      }
      if (!r.contents.chosen_key.empty()) {
        std::vector<std::string> others;
        for (const std::string& k : r.contents.other_keys) others.push_back(json_string(k));
        fmt::print(stderr, "note: imported the model part, key {}{} (--all imports everything)\n",
                   json_string(r.contents.chosen_key),
                   others.empty() ? "" : fmt::format("; left out {}", fmt::join(others, ", ")));
      }
      fmt::print(
          report_stream(a->dst),
          "{} -> {}: {} tensor{} ({}{}), {} alias{} recorded, {} other value{} dropped{}\n",
          display_location(a->src), display_location(a->dst), r.tensors_written,
          r.tensors_written == 1 ? "" : "s", human_size(r.bytes_written),
          options.dtype ? fmt::format("; {} converted to {}", r.tensors_converted,
                                      tlio::dtype_name(*options.dtype))
                        : "",
          aliases, aliases == 1 ? "" : "es", r.contents.dropped_values,
          r.contents.dropped_values == 1 ? "" : "s",
          r.contents.skipped.empty() ? "" : fmt::format(", {} skipped", r.contents.skipped.size()));
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli
