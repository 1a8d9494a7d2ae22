// tests/test_data_dir.cpp: where the test data lies, compiled in from TLIO_TEST_DATA.
#include "test_util.hpp"

namespace tlio::test {

std::filesystem::path data_dir() { return TLIO_TEST_DATA; }

}  // namespace tlio::test
