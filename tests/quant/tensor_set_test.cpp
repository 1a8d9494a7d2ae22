// Tests for quant/tensor_set.hpp: a set's tensors are its files' tables, file by file, in
// order, with files that hold no tensor passed over.
#include "quant/tensor_set.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tlio/file.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

File file_of(const std::vector<std::string>& names) {
  Writer w = Writer::to_memory();
  for (const std::string& n : names) w.declare(n, Dtype::U8, {1});
  const std::byte one[1] = {};
  for (const std::string& n : names) w.write(n, one);
  w.commit();
  return File::from_bytes(w.take_bytes());
}

std::vector<std::string> names_of(const detail::TensorSet& set) {
  std::vector<std::string> out;
  for (const TensorInfo* t : set.tensors()) out.push_back(t->name);
  return out;
}

TEST(TensorSet, TensorsAreTheFilesTablesInOrderPassingOverEmptyFiles) {
  const File empty = file_of({}), a = file_of({"a.x", "a.y"}), b = file_of({"b.x"});
  EXPECT_EQ(names_of(detail::TensorSet({&empty, &a, &empty, &empty, &b, &empty})),
            (std::vector<std::string>{"a.x", "a.y", "b.x"}));
  EXPECT_EQ(names_of(detail::TensorSet({&a})), (std::vector<std::string>{"a.x", "a.y"}));
  EXPECT_TRUE(names_of(detail::TensorSet({&empty, &empty})).empty());
  EXPECT_EQ(detail::TensorSet({&empty, &b}).file_of("b.x").tensors().size(), 1u);
}

}  // namespace
}  // namespace tlio
