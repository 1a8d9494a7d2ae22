// Tests for the pairing of a GGUF file's rows with a Hugging Face folder's: the row each side
// holds is checked against llama.cpp's converter's permutation built here step by step
// (reshape to [heads, 2, d/2], swap the last two axes, flatten).
#include "report/pairing.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tlio::detail {
namespace {

// The Hugging Face row each GGUF row holds after llama.cpp's permute(w, heads).
std::vector<uint64_t> converter_rows(uint64_t rows, uint64_t heads) {
  const uint64_t half = rows / heads / 2;
  std::vector<uint64_t> out;
  for (uint64_t h = 0; h < heads; ++h)
    for (uint64_t i = 0; i < half; ++i)  // the swapped axes: half first,
      for (uint64_t j = 0; j < 2; ++j)   // then the pair
        out.push_back(h * 2 * half + j * half + i);
  return out;
}

TEST(Pairing, GgufRowsFindTheirHuggingFaceRows) {
  for (const auto& [rows, heads] :
       std::vector<std::pair<uint64_t, uint64_t>>{{8, 1}, {16, 2}, {48, 4}, {64, 8}}) {
    const std::vector<uint64_t> hf = converter_rows(rows, heads);
    const Pairing gguf_model{"w", heads, true}, hf_model{"w", heads, false};
    for (uint64_t o = 0; o < rows; ++o) {
      EXPECT_EQ(gguf_model.reference_row(o, rows), hf[o])
          << rows << " rows, " << heads << " heads, row " << o;
      EXPECT_EQ(hf_model.reference_row(hf[o], rows), o)
          << rows << " rows, " << heads << " heads, row " << o;
    }
  }
}

TEST(Pairing, UnpermutedRowsAreTheirOwn) {
  const Pairing p{"w", 0, true};
  for (uint64_t r = 0; r < 10; ++r) EXPECT_EQ(p.reference_row(r, 10), r);
}

}  // namespace
}  // namespace tlio::detail
