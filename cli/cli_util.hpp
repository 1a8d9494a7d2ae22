// cli/cli_util.hpp: what every subcommand shares: error reporting with the exit-code contract
// (0 success, 1 failure, 2 usage), human-readable sizes and JSON output helpers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace tlio::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

/// Runs `body`; a tlio::Error or other exception becomes one line on stderr and exit 1.
int guarded(const std::function<int()>& body);

/// Prints "tlio: <message>" to stderr.
void print_error(std::string_view message);

/// "16 B", "1.5 KiB", "3.2 GiB".
std::string human_size(uint64_t bytes);

/// A name as shown in tables: as is, or JSON-quoted when it holds control characters, spaces
/// at the ends, or is empty.
std::string display_name(std::string_view name);

}  // namespace tlio::cli
