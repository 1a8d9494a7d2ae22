#include "cli_util.hpp"

#include <cstdio>
#include <exception>
#include <new>

#include <fmt/core.h>

#include "tlio/error.hpp"
#include "tlio/header.hpp"

namespace tlio::cli {

void print_error(std::string_view message) { fmt::print(stderr, "tlio: {}\n", message); }

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const tlio::Error& e) {
    print_error(e.what());
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
  } catch (const std::exception& e) {
    print_error(e.what());
  }
  return kExitFailure;
}

std::string human_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 6) {
    v /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string display_name(std::string_view name) {
  bool plain = !name.empty() && name.front() != ' ' && name.back() != ' ';
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7F || c == '"') plain = false;
  if (plain) return std::string(name);
  std::string out;
  tlio::append_json_string(out, name);
  return out;
}

}  // namespace tlio::cli
