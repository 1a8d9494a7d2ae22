#include "cli_util.hpp"

#include <fmt/core.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <simdjson.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <new>

#include "arg_checks.hpp"
#include "tlio/convert.hpp"
#include "tlio/dtype.hpp"
#include "tlio/error.hpp"
#include "tlio/header.hpp"
#include "tlio/location.hpp"
#include "tlio/model.hpp"

namespace tlio::cli {

namespace {
std::string& token_option() {
  static std::string token;
  return token;
}
}  // namespace

void add_remote_options(CLI::App* cmd, bool token) {
  if (token)
    cmd->add_option(
        "--token", token_option(),
        "Bearer token for http(s):// and hf:// URLs, sent to their own host only (default: $HF_TOKEN)");
  // As the AWS CLI's flag; the library reads the variable for every s3:// request.
  cmd->add_flag_callback(
      "--no-sign-request", [] { ::setenv("AWS_NO_SIGN_REQUEST", "true", 1); },
      "Send s3:// requests unsigned (public buckets), as AWS_NO_SIGN_REQUEST=true");
}

tlio::OpenOptions open_options() {
  return {.backend = tlio::Backend::mmap,
          .token = token_option(),
          .warning = [](std::string_view message) {
            std::fprintf(stderr, "tlio: warning: %.*s\n", static_cast<int>(message.size()),
                         message.data());
          }};
}

void check_stdout_output(const std::string& out, bool json) {
  if (!tlio::is_standard_stream(out)) return;
  if (json) throw UsageError("--json and the output '-' would both use standard output");
  if (isatty(STDOUT_FILENO))
    throw UsageError("the output '-' is standard output, a terminal: redirect it (> FILE, | ...)");
}

std::FILE* report_stream(const std::string& out) {
  return tlio::is_standard_stream(out) ? stderr : stdout;
}

bool has_numeric_values(tlio::Dtype d) { return tlio::can_convert(d, tlio::Dtype::F64); }

void add_max_size_option(CLI::App* cmd, std::string& max_size) {
  cmd->add_option("--max-size", max_size,
                  "A folder's output in new shards of at most SIZE tensor bytes (5GB, 500MiB, ...; "
                  "default: the source's shards)")
      ->check(size_check());
}

tlio::FolderOptions folder_options(const std::string& max_size, tlio::FolderFiles* files,
                                   const tlio::FolderJob* job) {
  if (!max_size.empty() && tlio::parse_size(max_size) == 0)
    throw UsageError(
        "--max-size 0: a shard holds at least a byte (leave --max-size out to keep the source's shards)");
  tlio::FolderOptions o;
  o.open = open_options();
  if (!max_size.empty()) o.max_shard_size = tlio::parse_size(max_size);
  o.files = files;
  o.job = job;
  return o;
}

void add_job_options(CLI::App* cmd, JobOptions& j) {
  cmd->add_option("--job", j.id,
                  "Run as a job of units (docs/jobs.md): ID names its staging folder in OUT")
      ->check([](const std::string& v) -> std::string {
        return tlio::valid_job_id(v)
                   ? std::string{}
                   : fmt::format("--job takes 1 to {} of A-Z a-z 0-9 - _", tlio::kMaxJobIdLength);
      });
  cmd->add_option("--job-step", j.step,
                  "The job's step: plan (prints the number of units), a unit's number, commit "
                  "(publishes the folder) or abort")
      ->check([](const std::string& v) -> std::string {
        try {
          tlio::parse_job_step("x", v);
          return {};
        } catch (const tlio::Error&) {
          return "--job-step is plan, commit, abort or a unit's number, not '" + v + "'";
        }
      });
}

JobStep::JobStep(const JobOptions& j) {
  if (j.id.empty() && j.step.empty()) return;
  if (j.id.empty() || j.step.empty())
    throw UsageError("--job and --job-step go together (docs/jobs.md)");
  job_ = tlio::parse_job_step(j.id, j.step);
  job_->units = &units_;
}

bool JobStep::print(const std::string& out, bool json) const {
  if (!job_ || job_->step == tlio::FolderJob::Step::commit) return false;
  using Step = tlio::FolderJob::Step;
  const char* step = job_->step == Step::plan   ? "plan"
                     : job_->step == Step::unit ? "unit"
                                                : "abort";
  if (json) {
    fmt::print("{{\"output\":{},\"job\":{},\"step\":\"{}\"{}}}\n",
               json_string(display_location(out)), json_string(job_->id), step,
               job_->step == Step::plan   ? fmt::format(",\"units\":{}", units_)
               : job_->step == Step::unit ? fmt::format(",\"unit\":{}", job_->unit)
                                          : "");
  } else if (job_->step == Step::plan) {
    fmt::print("job {}: {} unit{} (--job-step 0 .. {}, then commit)\n", job_->id, units_,
               units_ == 1 ? "" : "s", units_ ? units_ - 1 : 0);
  } else if (job_->step == Step::unit) {
    fmt::print("job {}: unit {} written\n", job_->id, job_->unit);
  } else {
    fmt::print("job {}: aborted, its staging folder removed\n", job_->id);
  }
  return true;
}

std::vector<std::string> expand_globs(const std::vector<std::string>& args,
                                      const std::vector<std::string>& names,
                                      const std::string& input) {
  std::vector<std::string> out;
  for (const std::string& arg : args) {
    const bool pattern = arg.find_first_of("*?[") != std::string::npos;
    if (!pattern || std::find(names.begin(), names.end(), arg) != names.end()) {
      out.push_back(arg);
      continue;
    }
    const size_t before = out.size();
    for (const std::string& n : names)
      if (fnmatch(arg.c_str(), n.c_str(), 0) == 0) out.push_back(n);
    if (out.size() == before)
      throw UsageError(fmt::format("no tensor of {} matches '{}'", display_location(input), arg));
  }
  return out;
}

std::string json_files_member(const std::vector<std::string>& files) {
  if (files.empty()) return {};
  std::vector<std::string> names;
  for (const std::string& f : files) names.push_back(json_string(f));
  return fmt::format(",\"files\":[{}]", fmt::join(names, ","));
}

void print_error(std::string_view message) { fmt::print(stderr, "tlio: {}\n", message); }

namespace {
std::string running_command;  // the command being run, for print_usage_error's pointer to help
}  // namespace

void set_running_command(std::string name) { running_command = std::move(name); }

void print_usage_error(std::string_view message) {
  print_error(message);
  if (!running_command.empty())
    fmt::print(stderr, "tlio {} --help shows its options\n", running_command);
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    print_usage_error(e.what());
    return kExitUsage;
  } catch (const tlio::Error& e) {
    print_error(e.what());
  } catch (const std::bad_alloc&) {
    print_error("out of memory");
  } catch (const std::exception& e) {
    print_error(e.what());
  }
  return kExitFailure;
}

int guarded_json(const std::function<int()>& body, std::string& error, std::string* message) {
  error = "null";
  try {
    return body();
  } catch (const UsageError& e) {
    if (message) *message = e.what();
    error = fmt::format("{{\"message\":{}}}", json_string(e.what()));
    return kExitUsage;
  } catch (const tlio::Error& e) {
    if (message) *message = e.what();
    error = fmt::format("{{\"message\":{}", json_string(e.what()));
    if (e.rule() != tlio::Rule::none)
      error += fmt::format(",\"rule\":{}", json_string(e.rule_name()));
    if (!e.tensor().empty()) error += fmt::format(",\"tensor\":{}", json_string(e.tensor()));
    if (e.offset()) error += fmt::format(",\"offset\":{}", *e.offset());
    if (e.os_error()) error += fmt::format(",\"errno\":{}", e.os_error().value());
    error += "}";
  } catch (const std::bad_alloc&) {
    if (message) *message = "out of memory";
    error = R"({"message":"out of memory"})";
  } catch (const std::exception& e) {
    if (message) *message = e.what();
    error = fmt::format("{{\"message\":{}}}", json_string(e.what()));
  }
  return kExitFailure;
}

int guarded_output(bool json, const std::function<int()>& body) {
  if (!json) return guarded(body);
  // The message on stderr as always (people read it), and in the document on stdout.
  std::string error, message;
  const int rc = guarded_json(body, error, &message);
  if (rc != kExitOk && error != "null") {
    if (rc == kExitUsage)
      print_usage_error(message);
    else
      print_error(message);
    fmt::print("{{\"error\":{}}}\n", error);
  }
  return rc;
}

std::string join_path(const std::string& dir, const std::string& rel) {
  return dir.empty() || dir.back() == '/' ? dir + rel : dir + "/" + rel;
}

std::string thousands(uint64_t n) {
  std::string s = std::to_string(n);
  for (size_t at = s.size(); at > 3; at -= 3) s.insert(at - 3, ",");
  return s;
}

std::vector<std::string> convert_dtype_names() {
  std::vector<std::string> out;
  for (tlio::Dtype d : tlio::all_dtypes())
    if (tlio::is_floating(d) && tlio::can_convert(tlio::Dtype::F32, d))
      out.emplace_back(tlio::dtype_name(d));
  return out;
}

std::string convert_dtype_text() {
  return fmt::format(
      "{} (or fp16, float16, half, bf16, bfloat16, fp32, float32, float, fp64, double, ...)",
      fmt::join(convert_dtype_names(), ", "));
}

namespace {
std::map<const CLI::Option*, std::vector<std::string>>& offered() {
  static std::map<const CLI::Option*, std::vector<std::string>> values;
  return values;
}
}  // namespace

CLI::Option* offer_values(CLI::Option* option, std::vector<std::string> values) {
  offered()[option] = std::move(values);
  return option;
}

const std::vector<std::string>* offered_values(const CLI::Option* option) {
  const auto it = offered().find(option);
  return it == offered().end() ? nullptr : &it->second;
}

std::string shape_text(std::span<const uint64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
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

ProgressBar::ProgressBar(std::string label, uint64_t min_total_to_show)
    : label_(std::move(label)), min_total_(min_total_to_show), enabled_(isatty(STDERR_FILENO)) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::finish() {
  if (drawn_) fmt::print(stderr, "\n");
  drawn_ = false;
  enabled_ = false;
}

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || total < min_total_) return;
  const int permille = total ? static_cast<int>(done * 1000 / total) : 1000;
  if (permille == last_permille_) return;
  last_permille_ = permille;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  fmt::print(stderr, "\r{} [{}{}] {:5.1f}% {} / {}", label_, std::string(filled, '#'),
             std::string(kWidth - filled, ' '), permille / 10.0, human_size(done),
             human_size(total));
  std::fflush(stderr);
  drawn_ = true;
}

size_t display_width(std::string_view s) {
  size_t width = 0;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (len > 1) {
      cp = c & (0xFF >> (len + 1));
      for (size_t k = 1; k < len && i + k < s.size(); ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    i += len;
    if ((cp >= 0x0300 && cp <= 0x036F) || cp == 0x200D || (cp >= 0xFE00 && cp <= 0xFE0F)) continue;
    bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) ||
                (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
                (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF) ||
                (cp >= 0x20000 && cp <= 0x3FFFD);
    width += wide ? 2 : 1;
  }
  return width;
}

std::string pad(std::string_view s, size_t width, bool right) {
  size_t w = display_width(s);
  std::string fill(w < width ? width - w : 0, ' ');
  return right ? fill + std::string(s) : std::string(s) + fill;
}

std::string json_number(double v) { return std::isfinite(v) ? fmt::format("{}", v) : "null"; }

std::string json_string(std::string_view text) {
  // A path need not be UTF-8: bytes that are not become U+FFFD, so the document stays JSON.
  std::string valid;
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    for (size_t i = 0; i < text.size();) {
      size_t n = 1;
      const auto b = static_cast<unsigned char>(text[i]);
      if (b >= 0xC0) n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
      if (b < 0x80 ||
          (b >= 0xC0 && i + n <= text.size() && simdjson::validate_utf8(text.data() + i, n))) {
        valid.append(text.substr(i, b < 0x80 ? 1 : n));
        i += b < 0x80 ? 1 : n;
      } else {
        valid += "\xEF\xBF\xBD";
        ++i;
      }
    }
    text = valid;
  }
  const std::string_view s = text;
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else
          out += c;
    }
  }
  out += '"';
  return out;
}

std::string display_name(std::string_view name) {
  bool plain = !name.empty() && name.front() != ' ' && name.back() != ' ';
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7F || c == '"') plain = false;
  return plain ? std::string(name) : json_string(name);
}

}  // namespace tlio::cli
