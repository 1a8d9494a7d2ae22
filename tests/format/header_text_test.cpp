// Tests for format/header_text.hpp: the canonical layout and header text.
#include "format/header_text.hpp"

#include <gtest/gtest.h>

namespace tlio::detail {
namespace {

TEST(HeaderText, CanonicalLayoutAndText) {
  std::vector<TensorInfo> t(1);
  t[0].name = "w";
  t[0].dtype = Dtype::F32;
  t[0].shape = {2, 2};
  canonical_layout(t);
  EXPECT_EQ(
      canonical_header({{"format", "tinyllm"}}, t),
      R"({"__metadata__":{"format":"tinyllm"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})"
      "   ");
  EXPECT_EQ(canonical_header({}, {}), "{}      ");
}

}  // namespace
}  // namespace tlio::detail
