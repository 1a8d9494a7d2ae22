// cli/cmd_model.cpp: `tlio shard`, `tlio merge` and `tlio bigram train|generate`.
#include <fmt/core.h>
#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "arg_checks.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "tlio/bigram.hpp"
#include "tlio/error.hpp"
#include "tlio/file.hpp"
#include "tlio/model.hpp"

namespace tlio::cli {

void add_shard(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("shard", "Split a file into shards with an index (HF layout)");
  cmd->footer(
      "Shards are filled greedily in canonical order; each holds at most SIZE bytes of tensor\n"
      "data (a larger tensor gets a shard of its own) and the source's metadata. Sizes as\n"
      "transformers reads them: 5GB = 5*10^9, 40KB = 40,000, 5GiB = 5*2^30. When everything\n"
      "fits, OUTDIR gets one model.safetensors and no index. --max-size defaults to 5GB, as\n"
      "transformers' save_pretrained.\n\n"
      "Example: tlio shard model.safetensors out/ --max-size 2GB");
  struct Args {
    std::string in, out, size = "5GB";
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("IN", a->in, "Input file or URL (http(s)://, s3://, gs://, hf://)")->required();
  add_remote_options(cmd);
  cmd->add_option("OUTDIR", a->out,
                  "Output directory (created if missing), or an s3:// or gs:// prefix")
      ->required();
  cmd->add_option("--max-size", a->size, "Largest tensor data per shard (default 5GB)")
      ->check(size_check());
  cmd->add_flag("--json", a->json,
                "One JSON document on stdout: {\"input\", \"output\", \"files\", \"total_size\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      const uint64_t max = tlio::parse_size(a->size);
      tlio::File src = tlio::File::open(a->in, open_options());
      ProgressBar bar("sharding");
      tlio::ShardReport r = tlio::shard_file(
          src, a->out, max, [&bar](uint64_t done, uint64_t total) { bar.update(done, total); });
      bar.finish();
      if (a->json) {
        std::vector<std::string> files;
        for (const auto& f : r.files) files.push_back(json_string(f));
        fmt::print("{{\"input\":{},\"output\":{},\"files\":[{}],\"total_size\":{}}}\n",
                   json_string(display_location(a->in)), json_string(display_location(a->out)),
                   fmt::join(files, ","), r.total_size);
        return kExitOk;
      }
      for (const auto& f : r.files) fmt::print("  {}\n", f);
      fmt::print("{} -> {}: {} file{}, {} of tensor data\n", display_location(a->in),
                 display_location(a->out), r.files.size(), r.files.size() == 1 ? "" : "s",
                 human_size(r.total_size));
      return kExitOk;
    });
  });
}

void add_merge(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("merge", "Merge a sharded model directory into one file");
  cmd->footer(
      "The shards' metadata must agree. Merging what `tlio shard` wrote gives back the\n"
      "original (canonical) bytes.\n\nExample: tlio merge out/ model.safetensors");
  struct Args {
    std::string dir, out;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("DIR", a->dir, "Model directory (or its URL: http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(cmd);
  cmd->add_option("OUT", a->out, "Output file (or s3://, gs:// location)")->required();
  cmd->add_flag(
      "--json", a->json,
      "One JSON document on stdout: {\"input\", \"output\", \"tensors\", \"data_bytes\"}");
  cmd->callback([a, &exit_code] {
    exit_code = guarded_output(a->json, [&] {
      check_stdout_output(a->out, a->json);
      {
        ProgressBar bar("merging");
        tlio::merge_shards(
            a->dir, a->out, [&bar](uint64_t done, uint64_t total) { bar.update(done, total); },
            open_options());
      }
      if (tlio::is_standard_stream(a->out)) {  // the file went to stdout: nothing to open again
        fmt::print(stderr, "{} -> -: merged\n", display_location(a->dir));
        return kExitOk;
      }
      tlio::File f = tlio::File::open(a->out);
      if (a->json)
        fmt::print("{{\"input\":{},\"output\":{},\"tensors\":{},\"data_bytes\":{}}}\n",
                   json_string(display_location(a->dir)), json_string(display_location(a->out)),
                   f.tensors().size(), f.header().data_size());
      else
        fmt::print("{} -> {}: {} tensor{}, {}\n", display_location(a->dir),
                   display_location(a->out), f.tensors().size(), f.tensors().size() == 1 ? "" : "s",
                   human_size(f.header().data_size()));
      return kExitOk;
    });
  });
}

void add_bigram(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("bigram", "The bigram tracer model: train and generate");
  cmd->require_subcommand(1);
  auto* train = cmd->add_subcommand("train", "Count byte bigrams of a text into a model directory");
  train->footer(
      "Writes OUTDIR/config.json and OUTDIR/model.safetensors (bigram.weight F32\n"
      "[256, 256] = log((c_ij + 1) / (c_i + 256))).\n\n"
      "Example: tlio bigram train examples/sonnets.txt model/");
  struct TrainArgs {
    std::string text, out;
  };
  auto t = std::make_shared<TrainArgs>();
  train->add_option("TEXT", t->text, "Text file")->required();
  train->add_option("OUTDIR", t->out, "Model directory to write")->required();
  train->callback([t, &exit_code] {
    exit_code = guarded([&] {
      errno = 0;
      std::ifstream in(t->text, std::ios::binary);
      if (!in)  // ifstream keeps errno from open(2) on glibc; the message says why when it can
        tlio::throw_io("cannot open", t->text,
                       errno ? std::error_code(errno, std::generic_category()) : std::error_code());
      std::ostringstream s;
      s << in.rdbuf();
      const std::string text = s.str();
      tlio::bigram_train(text, t->out);
      fmt::print("{} -> {}: {} bytes, {} bigrams counted\n", t->text, t->out, text.size(),
                 text.empty() ? 0 : text.size() - 1);
      return kExitOk;
    });
  });

  auto* gen = cmd->add_subcommand("generate", "Sample text from a bigram model");
  gen->footer(
      "Loads DIR by mmap and samples from softmax(W[last byte] / T). The same seed gives\n"
      "the same text. Without --prompt, generation starts after a newline.\n\n"
      "Example: tlio bigram generate model/ --prompt 'Shall I' --tokens 200 --seed 7");
  struct GenArgs {
    std::string dir;
    tlio::BigramSampling s;
  };
  auto g = std::make_shared<GenArgs>();
  gen->add_option("DIR", g->dir, "Model directory (or its URL: http(s)://, s3://, gs://, hf://)")
      ->required();
  add_remote_options(gen);
  gen->add_option("--prompt", g->s.prompt, "Text to continue");
  gen->add_option("--tokens", g->s.tokens, "Bytes to generate (default 100)")
      ->check(count_check(tlio::kMaxBigramTokens));
  gen->add_option("--seed", g->s.seed, "Random seed (default 0)")->check(count_check(UINT64_MAX));
  gen->add_option("--temperature", g->s.temperature, "Softmax temperature, 0 = greedy (default 1)")
      ->check(non_negative_check());
  gen->callback([g, &exit_code] {
    exit_code = guarded([&] {
      tlio::Model m = tlio::Model::open(g->dir, open_options());
      const std::string text = tlio::bigram_generate(m, g->s);
      fmt::print("{}{}\n", g->s.prompt, text);
      return kExitOk;
    });
  });
}

}  // namespace tlio::cli
