// Tests for tlio/shape.hpp: inline and heap storage behave like a vector.
#include "tlio/shape.hpp"

#include <gtest/gtest.h>

namespace tlio {
namespace {

TEST(Shape, InlineAndHeap) {
  for (size_t rank : {0u, 1u, 4u, 5u, 10u, 64u}) {
    std::vector<uint64_t> v;
    for (size_t i = 0; i < rank; ++i) v.push_back(i * 3 + 1);
    Shape a(v);
    EXPECT_EQ(a, v);
    Shape b;
    for (uint64_t d : v) b.push_back(d);
    EXPECT_EQ(b, a);
    Shape c = a;  // copy
    EXPECT_EQ(c.to_vector(), v);
    Shape d = std::move(c);  // move
    EXPECT_EQ(d, v);
    EXPECT_TRUE(c.empty());
    c = d;  // copy-assign into a moved-from shape
    EXPECT_EQ(c, v);
    d = Shape{7};
    EXPECT_EQ(d, std::vector<uint64_t>{7});
    d = std::move(a);
    EXPECT_EQ(d, v);
    if (rank) {
      EXPECT_EQ(d.back(), v.back());
    }
  }
}

TEST(Shape, SelfAssignmentAndGrowthKeepValues) {
  Shape s{1, 2, 3, 4};
  s.push_back(5);  // spills to the heap
  s.push_back(6);
  EXPECT_EQ(s, (std::vector<uint64_t>{1, 2, 3, 4, 5, 6}));
  const Shape& alias = s;
  s = alias;
  EXPECT_EQ(s.size(), 6u);
  s.reserve(100);
  EXPECT_EQ(s[5], 6u);
}

}  // namespace
}  // namespace tlio
