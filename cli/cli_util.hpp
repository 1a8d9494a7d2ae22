// cli/cli_util.hpp: what every subcommand shares: error reporting with the exit-code contract
// (0 success, 1 failure, 2 usage), human-readable sizes and JSON output helpers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tlio/file.hpp"
#include "tlio/folder_rewrite.hpp"
#include "tlio/location.hpp"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace tlio::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

/// An argument the input cannot take (a slice past a tensor's end), found once the input is
/// open: guarded() reports it as a usage error, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs `body`; a tlio::Error or other exception becomes one line on stderr and exit 1 (a
/// UsageError exit 2).
int guarded(const std::function<int()>& body);
/// The same for --json: the failure becomes `error`, a JSON object ({"message", "rule",
/// "tensor", "offset", "errno"}; rule/tensor/offset/errno when the error has them), and nothing is
/// printed. `error` is "null" on success.
int guarded_json(const std::function<int()>& body, std::string& error,
                 std::string* message = nullptr);
/// guarded(), or with `json` a failure printed as the one JSON document on stdout:
/// {"error": {...}} (as guarded_json describes it), its message on stderr too.
int guarded_output(bool json, const std::function<int()>& body);

/// Adds --token (a bearer token for http(s):// and hf:// URLs) and --no-sign-request (s3://
/// requests unsigned) to a subcommand that reads or writes files (without --token for those
/// that take no OpenOptions: their hf:// reads use $HF_TOKEN).
void add_remote_options(CLI::App* cmd, bool token = true);
/// How commands open their inputs: the mmap backend, or URLs with the --token given.
tlio::OpenOptions open_options();

/// OUT "-": the output file goes to standard output (the library writes it to an unnamed
/// temporary and copies it there on commit). UsageError when --json would share stdout with it,
/// or stdout is a terminal (binary output would garble it).
void check_stdout_output(const std::string& out, bool json);
/// Where a command's one-line report goes: stdout, or stderr when OUT is "-".
std::FILE* report_stream(const std::string& out);
/// Whether a dtype's values convert to numbers (cat and stats show them; BOOL too, not C64).
bool has_numeric_values(tlio::Dtype d);
/// Adds --max-size SIZE (re-shard a folder's output) to a command that rewrites folders.
void add_max_size_option(CLI::App* cmd, std::string& max_size);
/// How a rewrite by location (tlio/rewrite.hpp) reads IN (open_options()) and, for a folder,
/// re-shards its output by `max_size` ("" keeps the source's shards; 0 is a UsageError) and
/// lists the files it published in `files` (left empty for a file).
tlio::FolderOptions folder_options(const std::string& max_size, tlio::FolderFiles* files,
                                   const tlio::FolderJob* job = nullptr);

/// --job ID and --job-step STEP, as given.
struct JobOptions {
  std::string id, step;
};
/// Adds --job and --job-step to a command that rewrites or imports folders.
void add_job_options(CLI::App* cmd, JobOptions& j);

/// The step of a job of units (tlio/folder_job.hpp) a command runs: none without --job;
/// UsageError for --job without --job-step or the reverse.
class JobStep {
 public:
  explicit JobStep(const JobOptions& j);
  JobStep(const JobStep&) = delete;
  const tlio::FolderJob* get() const noexcept { return job_ ? &*job_ : nullptr; }
  /// Prints what a step other than commit did ("job ID: 4 units", or its JSON) and returns
  /// true; false without a job and for commit, whose report is the command's own.
  bool print(const std::string& out, bool json) const;

 private:
  std::optional<tlio::FolderJob> job_;
  uint64_t units_ = 0;  // the plan's answer
};
/// NAME arguments with glob patterns (*, ?, [...]; '*' crosses dots) replaced by the names they
/// match, in `names`' order; an argument that is itself a name, or has no pattern, stays as it
/// is. A pattern that matches nothing is a UsageError naming it and `input`.
std::vector<std::string> expand_globs(const std::vector<std::string>& args,
                                      const std::vector<std::string>& names,
                                      const std::string& input);
/// `,"files":[...]`: the files a folder rewrite published, for --json; "" for none.
std::string json_files_member(const std::vector<std::string>& files);

/// Prints "tlio: <message>" to stderr.
void print_error(std::string_view message);
/// print_error, then "tlio CMD --help shows its options" for the command being run (as CLI11's
/// own usage errors end), so that every usage error points at the help.
void print_usage_error(std::string_view message);
/// Names the command being run, for print_usage_error (main sets it as a command is parsed).
void set_running_command(std::string name);

/// `dir` + "/" + `rel`, without doubling a '/' that `dir` ends with (paths as the user gave them).
std::string join_path(const std::string& dir, const std::string& rel);

/// 6738415616 as "6,738,415,616".
std::string thousands(uint64_t n);

/// The dtypes `convert --dtype` takes: the floating ones F32 converts to.
std::vector<std::string> convert_dtype_names();
/// The same for a message about an unknown one: "F4, ..., F64 (or fp16, float16, ...)".
std::string convert_dtype_text();
/// What quantized weights dequantize to (`dequantize --dtype`, `slice --dtype`).
inline const std::vector<std::string> kDequantizeDtypeNames = {"F32", "F16", "BF16"};

/// The values shell completion offers after `option`. An option without them completes file
/// names when its type name is PATH and nothing otherwise (a regex, a size: free text).
CLI::Option* offer_values(CLI::Option* option, std::vector<std::string> values);
const std::vector<std::string>* offered_values(const CLI::Option* option);

/// A shape as tables show it: "[4096, 11008]".
std::string shape_text(std::span<const uint64_t> shape);

/// "16 B", "1.5 KiB", "3.2 GiB".
std::string human_size(uint64_t bytes);

/// A progress bar on stderr, drawn only when stderr is a terminal and the work is large enough
/// to be worth watching. update() is cheap to call often.
class ProgressBar {
 public:
  ProgressBar(std::string label, uint64_t min_total_to_show = uint64_t{64} << 20);
  ~ProgressBar();
  void update(uint64_t done, uint64_t total);
  /// Ends the bar's line (before printing anything else).
  void finish();

 private:
  std::string label_;
  uint64_t min_total_;
  bool enabled_;
  bool drawn_ = false;
  int last_permille_ = -1;
};

/// Columns a UTF-8 string takes on a terminal (wide East Asian characters and emoji count 2,
/// combining marks 0).
size_t display_width(std::string_view s);

/// `s` padded with spaces to `width` columns (left-aligned, or right-aligned when `right`).
std::string pad(std::string_view s, size_t width, bool right = false);

/// A number for --json: shortest round-trip form, or null when it is not finite.
std::string json_number(double v);

/// `s` as a JSON string literal (the --json outputs): quotes, backslashes and control characters
/// escaped, everything else (UTF-8 included) as is.
std::string json_string(std::string_view s);

/// A name as shown in tables: as is, or JSON-quoted when it holds control characters, spaces
/// at the ends, or is empty.
std::string display_name(std::string_view name);

}  // namespace tlio::cli
