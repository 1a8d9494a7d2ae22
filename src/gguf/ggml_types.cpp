// gguf/ggml_types.cpp: ggml's tensor types (ggml.h's ids; blocks and sizes as ggml_blck_size and
// ggml_type_size give them) and GGUF's metadata value types.
#include <algorithm>
#include <cctype>

#include "tlio/gguf.hpp"

namespace tlio {

namespace {

// Ids ggml removed (4, 5, 31-33, 36-38) have no entry.
constexpr GgmlType kTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},       {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},         {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},     {42, "Q2_0", 64, 18},
};

}  // namespace

std::optional<GgmlType> ggml_type(uint32_t id) noexcept {
  for (const GgmlType& t : kTypes)
    if (t.id == id) return t;
  return std::nullopt;
}

std::optional<GgmlType> ggml_type_named(std::string_view name) noexcept {
  const auto same = [&](std::string_view known) {
    return std::ranges::equal(known, name, [](char a, char b) {
      return std::toupper(static_cast<unsigned char>(a)) == std::toupper(static_cast<unsigned char>(b));
    });
  };
  for (const GgmlType& t : kTypes)
    if (same(t.name)) return t;
  return std::nullopt;
}

std::string_view gguf_value_type_name(GgufValueType type) noexcept {
  static constexpr std::string_view kNames[] = {"UINT8",  "INT8",   "UINT16", "INT16", "UINT32",
                                                "INT32",  "FLOAT32", "BOOL",  "STRING", "ARRAY",
                                                "UINT64", "INT64",  "FLOAT64"};
  const auto i = static_cast<size_t>(type);
  return i < std::size(kNames) ? kNames[i] : std::string_view{"unknown"};
}

}  // namespace tlio
