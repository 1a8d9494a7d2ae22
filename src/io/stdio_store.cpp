// io/stdio_store.cpp: "-", standard input where a file is read and standard output where one is
// written: read by File::open alone (format/file.cpp: the header checked as it arrives); written
// through a staging copy, so a pipe gets a whole file or nothing.
#include <fmt/core.h>
#include <unistd.h>

#include "io/os_file.hpp"
#include "io/store.hpp"
#include "tlio/error.hpp"

namespace tlio::detail {

namespace {

constexpr std::string_view kStdinName = "<stdin>";
constexpr std::string_view kStdoutName = "<stdout>";

class StdioStore final : public Store {
 public:
  // Standard input can be read once only: File::open reads it itself, checking the header as it
  // arrives; nothing else may take it (a sniff for a checkpoint would leave nothing to read).
  std::shared_ptr<const ByteSource> open(const Location&, const SourceOptions&) const override {
    throw Error(ErrorCode::unsupported, Rule::none, {}, std::nullopt,
                "standard input is read as a safetensors file only", std::string(kStdinName));
  }

  std::optional<std::string> read_small(const Location&, const SourceOptions&) const override {
    return std::nullopt;
  }
  bool exists(const Location&, const SourceOptions&) const override { return true; }
  std::optional<bool> is_directory(const Location&) const override { return false; }
  void check_directory(const Location&) const override {
    throw_io("cannot open as a model", std::string(kStdinName),
             std::make_error_code(std::errc::not_a_directory));
  }
  std::string join(const std::string&, std::string_view name) const override {
    throw_invalid(fmt::format("standard input has no file '{}' in it", name));
  }
  std::string display(const std::string& text) const override { return text; }

  std::unique_ptr<StagedFile> stage(const Location&) const override {
    return stage_stream(STDOUT_FILENO, std::string(kStdoutName));
  }
};

}  // namespace

const Store& stdio_store() noexcept {
  static const StdioStore store;
  return store;
}

}  // namespace tlio::detail
