// model/bigram.cpp: the bigram tracer model (train by counting, generate by sampling).
#include "tlio/bigram.hpp"

#include <fmt/core.h>

#include <array>
#include <cmath>
#include <random>

#include "format/writer_access.hpp"
#include "model/layout.hpp"
#include "tlio/error.hpp"
#include "tlio/model.hpp"
#include "tlio/writer.hpp"

namespace tlio {

namespace {

constexpr uint64_t kVocab = 256;    // the bytes tokenizer
constexpr uint8_t kStartByte = 10;  // generation without a prompt starts after '\n'

}  // namespace

void bigram_train(std::string_view text, const std::filesystem::path& out_dir) {
  std::vector<uint64_t> counts(kVocab * kVocab, 0);
  for (size_t i = 0; i + 1 < text.size(); ++i)
    ++counts[static_cast<uint8_t>(text[i]) * kVocab + static_cast<uint8_t>(text[i + 1])];
  std::vector<float> w(kVocab * kVocab);
  for (uint64_t i = 0; i < kVocab; ++i) {
    uint64_t row = 0;
    for (uint64_t j = 0; j < kVocab; ++j) row += counts[i * kVocab + j];
    for (uint64_t j = 0; j < kVocab; ++j)
      w[i * kVocab + j] =
          static_cast<float>(std::log((static_cast<double>(counts[i * kVocab + j]) + 1.0) /
                                      (static_cast<double>(row) + static_cast<double>(kVocab))));
  }
  const detail::Location dir = detail::Location::parse(out_dir.native());
  detail::create_output_folder(dir);
  // config.json and the weights are published together (model/layout.hpp).
  detail::OutputSet set;
  set.add_text(
      dir.join(detail::kConfigFile),
      "{\n  \"tl_arch\": \"bigram\",\n  \"tl_tokenizer\": \"bytes\",\n  \"vocab_size\": 256\n}\n");
  Writer out = detail::WriterAccess::into_set(set, dir.join(detail::kSingleWeightsFile));
  out.set_metadata("format", "tinyllm");
  out.declare("bigram.weight", Dtype::F32, {kVocab, kVocab});
  out.write("bigram.weight", std::as_bytes(std::span(w)));
  out.commit();
  const std::string files[] = {detail::kConfigFile, detail::kSingleWeightsFile};
  detail::publish_weights(set, dir, files);
}

std::string bigram_generate(const Model& model, const BigramSampling& s) {
  if (model.config().arch != "bigram")
    throw_invalid(
        fmt::format("{} is a {} model, not a bigram model", model.name(), model.config().arch));
  model.check();
  if (model.config().vocab_size != kVocab)
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                fmt::format("bigram generation reads bytes: vocab_size must be 256, not {}",
                            model.config().vocab_size));
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature))
    throw_invalid(fmt::format("temperature must be >= 0, not {}", s.temperature));
  if (s.tokens > kMaxBigramTokens)
    throw_invalid(
        fmt::format("at most {} tokens are generated at once, not {}", kMaxBigramTokens, s.tokens));
  const TensorView w = model.view("bigram.weight");  // zero-copy (mmap)
  std::mt19937_64 rng(s.seed);
  uint8_t last = s.prompt.empty() ? kStartByte : static_cast<uint8_t>(s.prompt.back());
  std::string out;
  out.reserve(s.tokens);
  std::array<float, kVocab> logits;
  std::array<double, kVocab> p;
  for (uint64_t n = 0; n < s.tokens; ++n) {
    std::memcpy(logits.data(), w.bytes().data() + last * kVocab * 4, kVocab * 4);
    size_t best = 0;
    for (size_t j = 1; j < kVocab; ++j)
      if (logits[j] > logits[best]) best = j;
    size_t next = best;
    if (s.temperature > 0) {
      double sum = 0;
      for (size_t j = 0; j < kVocab; ++j)
        sum += p[j] = std::exp((static_cast<double>(logits[j]) - logits[best]) / s.temperature);
      // A uniform double from 53 random bits: the same on every platform for a seed.
      const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * sum;
      double acc = 0;
      next = kVocab - 1;
      for (size_t j = 0; j < kVocab; ++j) {
        acc += p[j];
        if (u < acc) {
          next = j;
          break;
        }
      }
    }
    out.push_back(static_cast<char>(next));
    last = static_cast<uint8_t>(next);
  }
  return out;
}

}  // namespace tlio
