// capi/quant.cpp: the C API of tlio/quant.hpp, compare.hpp and edit.hpp (quantized weights,
// whole-file quantize and dequantize, comparisons, edits).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>

#include "capi/handles.hpp"

using namespace tlio::capi;

namespace {

// The first tl_compare_options ended with progress_user: `filter` and the configs came later.
constexpr size_t kCompareOptionsFirstSize =
    offsetof(tl_compare_options, progress_user) + sizeof(void*);

// The library's options from the C struct (versions before `filter` and the configs taken).
tlio::CompareOptions compare_options(const tl_compare_options* options) {
  tlio::CompareOptions o;
  if (options) {
    o.atol = options->atol;
    o.rtol = options->rtol;
    if (options->progress) {
      const tl_progress_fn fn = options->progress;
      void* user = options->progress_user;
      o.progress = [fn, user](uint64_t done, uint64_t total) { fn(done, total, user); };
    }
    if (options->struct_size >= offsetof(tl_compare_options, filter) + sizeof(const char*) &&
        options->filter)
      o.filter = options->filter;
    if (options->struct_size == sizeof(tl_compare_options)) {  // the configs came last
      if (options->quantization_config_a) o.quantization_config_a = options->quantization_config_a;
      if (options->quantization_config_b) o.quantization_config_b = options->quantization_config_b;
    }
  }
  return o;
}

bool compare_options_sized(const tl_compare_options* options) {
  // Versions of the struct before `filter` are taken: a caller built against them never set it.
  return !options || (options->struct_size >= kCompareOptionsFirstSize &&
                      options->struct_size <= sizeof(tl_compare_options));
}

// The first `size` bytes of `defaults` into `options`, never more than the caller's struct (a
// program built against an older tlio.h has a smaller one), and struct_size = size: a size past
// this library's struct is refused by the calls that take the options.
template <class Options>
void init_sized(Options* options, const Options& defaults, size_t size) {
  if (!options || size < sizeof(size_t)) return;
  std::memcpy(options, &defaults, std::min(size, sizeof(Options)));
  options->struct_size = size;
}

tl_quantize_options quantize_defaults() {
  tl_quantize_options o{};
  o.storage = TL_U8;
  return o;
}

// The job step tl_job_begin set on this thread.
struct ThreadJob {
  std::optional<tlio::FolderJob> job;
  uint64_t units = 0;
};
thread_local ThreadJob thread_job;

}  // namespace

const tlio::FolderJob* tlio::capi::current_job() noexcept {
  return thread_job.job ? &*thread_job.job : nullptr;
}

extern "C" {

static const std::vector<tlio::QuantizedWeight>& quantized_of(const tl_file* file) {
  auto* f = const_cast<tl_file*>(file);  // a cache, not part of the file's observable state
  std::lock_guard<std::mutex> lock(f->cache_mutex);
  if (!f->quantized) {
    f->quantized = tlio::find_quantized_weights(f->file);
    for (const auto& q : *f->quantized) f->scheme_names.push_back(q.scheme.name());
  }
  return *f->quantized;
}

static const tlio::QuantizedReader& reader_of(const tl_file* file, const char* name) {
  const auto& all = quantized_of(file);  // takes the lock itself: before ours
  auto* f = const_cast<tl_file*>(file);
  std::lock_guard<std::mutex> lock(f->cache_mutex);
  auto it = f->readers.find(name);
  if (it == f->readers.end()) {
    auto w = std::find_if(all.begin(), all.end(), [&](const auto& q) { return q.name == name; });
    if (w == all.end())
      throw tlio::Error(tlio::ErrorCode::not_found, tlio::Rule::none, name, std::nullopt,
                        "no quantized weight named " + tlio::detail::quote_name(name));
    it = f->readers.emplace(name, tlio::QuantizedReader(f->file, *w)).first;
  }
  return it->second;
}

int tl_quantized_count(const tl_file* file, size_t* count) {
  TL_REQUIRE(file && count, "tl_quantized_count: NULL argument");
  return guard([&] { *count = quantized_of(file).size(); });
}

int tl_quantized_at(const tl_file* file, size_t index, tl_quantized_info* info) {
  TL_REQUIRE(file && info, "tl_quantized_at: NULL argument");
  return guard([&] {
    const auto& all = quantized_of(file);
    if (index >= all.size())
      throw tlio::Error(
          tlio::ErrorCode::not_found, tlio::Rule::none, {}, std::nullopt,
          "quantized weight index " + std::to_string(index) + " of " + std::to_string(all.size()));
    const tlio::QuantizedWeight& q = all[index];
    info->name = q.name.c_str();
    info->scheme = file->scheme_names[index].c_str();
    info->rank = q.shape.size();
    info->shape = q.shape.data();
    info->dtype = static_cast<tl_dtype>(q.dtype);
    info->blocksize = q.scheme.block();
    info->nested = q.scheme.nested() ? 1 : 0;
  });
}

int tl_quantized_read(const tl_file* file, const char* name, uint64_t first, uint64_t count,
                      tl_dtype out, void* dst, size_t dst_size) {
  TL_REQUIRE(file && name && (dst || dst_size == 0), "tl_quantized_read: NULL argument");
  TL_REQUIRE(valid_dtype(out), "tl_quantized_read: invalid dtype");
  return guard([&] {
    reader_of(file, name).read(first, count, to_cpp(out), {static_cast<std::byte*>(dst), dst_size});
  });
}

// The first tl_quantize_options is this one: a smaller struct_size is not a tl_quantize_options.
// A field added later is read only when the caller's struct_size covers it
// (offsetof(field) + sizeof(field) <= struct_size) and keeps its default otherwise.
static constexpr size_t kQuantizeOptionsFirstSize =
    offsetof(tl_quantize_options, progress_user) + sizeof(void*);

void tl_quantize_options_init_sized(tl_quantize_options* options, size_t size) {
  init_sized(options, quantize_defaults(), size);
}

// The name older programs call (tlio.h makes it a macro now: parenthesized, it is the function).
void(tl_quantize_options_init)(tl_quantize_options* options) {
  init_sized(options, quantize_defaults(), kQuantizeOptionsFirstSize);
}

namespace {

// tl_quantize_options as the library's, checked (struct_size, scheme) by the caller.
tlio::QuantizeOptions quantize_options(const tl_quantize_options& c, tlio::OpenOptions& open) {
  tlio::QuantizeOptions o;
  o.scheme = tlio::QuantScheme::parse(c.scheme);
  o.include = c.include ? c.include : "";
  o.exclude = c.exclude ? c.exclude : "";
  // Options left at their defaults are not given: a scheme without them takes them silently,
  // one given to a scheme that lacks it is refused by the registry.
  if (c.blocksize) o.scheme.set_option("blocksize", std::to_string(c.blocksize));
  if (c.nested) o.scheme.set_option("nested", "true");
  if (c.storage != TL_U8) o.scheme.set_option("storage", tl_dtype_name(c.storage));
  if (c.progress) {
    const tl_progress_fn fn = c.progress;
    void* user = c.progress_user;
    o.progress = [fn, user](uint64_t done, uint64_t total) { fn(done, total, user); };
  }
  if (c.struct_size >= offsetof(tl_quantize_options, token) + sizeof(c.token) && c.token)
    open.token = c.token;
  if (c.struct_size >= offsetof(tl_quantize_options, allow_1d) + sizeof(c.allow_1d))
    o.allow_1d = c.allow_1d != 0;
  return o;
}

// The dtype argument of the rewrites: -1 for none (checked by the caller with valid_dtype).
std::optional<tlio::Dtype> optional_dtype(int dtype) {
  if (dtype == -1) return std::nullopt;
  return to_cpp(static_cast<tl_dtype>(dtype));
}

#define TL_REQUIRE_QUANTIZE_OPTIONS(fn)                                                            \
  TL_REQUIRE(src&& dst&& options, fn ": NULL argument");                                           \
  TL_REQUIRE(options->struct_size >= kQuantizeOptionsFirstSize &&                                  \
                 options->struct_size <= sizeof(tl_quantize_options),                              \
             fn                                                                                    \
             ": struct_size is not that of a tl_quantize_options (use tl_quantize_options_init)"); \
  TL_REQUIRE(options->scheme, fn ": no scheme")

}  // namespace

int tl_quantize_file_with(const char* src, const char* dst, const tl_quantize_options* options) {
  TL_REQUIRE_QUANTIZE_OPTIONS("tl_quantize_file_with");
  return guard([&] {
    tlio::FolderOptions how;
    how.job = current_job();
    const tlio::QuantizeOptions o = quantize_options(*options, how.open);
    tlio::quantize_weights(src, dst, o, how);
  });
}

int tl_quantize_folder(const char* src, const char* dst, const tl_quantize_options* options,
                       uint64_t max_shard_size) {
  TL_REQUIRE_QUANTIZE_OPTIONS("tl_quantize_folder");
  return guard([&] {
    tlio::FolderOptions folder;
    folder.max_shard_size = max_shard_size;
    folder.job = current_job();
    const tlio::QuantizeOptions o = quantize_options(*options, folder.open);
    tlio::quantize_weights(src, dst, o, folder);
  });
}

int tl_quantize_file(const char* src, const char* dst, const char* scheme, uint64_t blocksize,
                     int nested, const char* include, const char* exclude) {
  tl_quantize_options o;
  tl_quantize_options_init(&o);
  o.scheme = scheme;
  o.blocksize = blocksize;
  o.nested = nested;
  o.include = include;
  o.exclude = exclude;
  return tl_quantize_file_with(src, dst, &o);
}

int tl_dequantize_file(const char* src, const char* dst, int dtype) {
  TL_REQUIRE(src && dst, "tl_dequantize_file: NULL argument");
  TL_REQUIRE(dtype == -1 || valid_dtype(static_cast<tl_dtype>(dtype)),
             "tl_dequantize_file: invalid dtype");
  return guard([&] {
    tlio::FolderOptions folder;
    folder.job = current_job();
    tlio::dequantize_weights(src, dst, optional_dtype(dtype), {}, folder);
  });
}

int tl_dequantize_folder(const char* src, const char* dst, int dtype, uint64_t max_shard_size) {
  TL_REQUIRE(src && dst, "tl_dequantize_folder: NULL argument");
  TL_REQUIRE(dtype == -1 || valid_dtype(static_cast<tl_dtype>(dtype)),
             "tl_dequantize_folder: invalid dtype");
  return guard([&] {
    tlio::FolderOptions folder;
    folder.max_shard_size = max_shard_size;
    folder.job = current_job();
    tlio::dequantize_weights(src, dst, optional_dtype(dtype), {}, folder);
  });
}

int tl_convert_folder(const char* src, const char* dst, int dtype, uint64_t max_shard_size) {
  TL_REQUIRE(src && dst, "tl_convert_folder: NULL argument");
  TL_REQUIRE(dtype == -1 || valid_dtype(static_cast<tl_dtype>(dtype)),
             "tl_convert_folder: invalid dtype");
  return guard([&] {
    tlio::FolderOptions folder;
    folder.max_shard_size = max_shard_size;
    folder.job = current_job();
    const std::optional<tlio::Dtype> to = optional_dtype(dtype);
    if (!to) {
      tlio::copy_weights(src, dst, {}, {}, folder);
      return;
    }
    tlio::ConvertFileOptions o;
    o.dtype = *to;
    tlio::convert_weights(src, dst, o, folder);
  });
}

int tl_convert_folder_ex(const char* src, const char* dst, int dtype, uint64_t max_shard_size,
                         int cast, uint64_t* overflowed, uint64_t* flushed) {
  TL_REQUIRE(src && dst, "tl_convert_folder_ex: NULL argument");
  TL_REQUIRE(valid_dtype(static_cast<tl_dtype>(dtype)), "tl_convert_folder_ex: invalid dtype");
  return guard([&] {
    tlio::FolderOptions folder;
    folder.max_shard_size = max_shard_size;
    folder.job = current_job();
    tlio::ConvertFileOptions o;
    o.dtype = to_cpp(static_cast<tl_dtype>(dtype));
    o.cast = cast != 0;
    const tlio::LostValues lost = tlio::convert_weights(src, dst, o, folder).lost_total();
    if (overflowed) *overflowed = lost.overflowed;
    if (flushed) *flushed = lost.flushed;
  });
}

int tl_job_begin(const char* id, int step, uint64_t unit) {
  thread_job = {};  // a step refused leaves no job behind, nor an earlier plan's count
  TL_REQUIRE(id, "tl_job_begin: NULL id");
  TL_REQUIRE(step >= TL_JOB_PLAN && step <= TL_JOB_ABORT, "tl_job_begin: unknown step");
  TL_REQUIRE(tlio::valid_job_id(id), "tl_job_begin: an id is 1 to 64 of A-Z a-z 0-9 - _");
  tlio::FolderJob job;
  job.id = id;
  job.step = static_cast<tlio::FolderJob::Step>(step);
  job.unit = unit;
  job.units = &thread_job.units;
  thread_job.job = std::move(job);
  return TL_OK;
}

uint64_t tl_job_units(void) { return thread_job.units; }

void tl_job_end(void) { thread_job.job.reset(); }

void tl_compare_options_init_sized(tl_compare_options* options, size_t size) {
  init_sized(options, tl_compare_options{}, size);
}

void(tl_compare_options_init)(tl_compare_options* options) {
  init_sized(options, tl_compare_options{}, kCompareOptionsFirstSize);
}

int tl_compare_files(const tl_file* a, const tl_file* b, const tl_compare_options* options,
                     tl_comparison** out) {
  TL_REQUIRE(a && b, "tl_compare_files: NULL argument");
  return tl_compare_sets(&a, 1, &b, 1, options, out);
}

int tl_compare_sets(const tl_file* const* a, size_t a_count, const tl_file* const* b,
                    size_t b_count, const tl_compare_options* options, tl_comparison** out) {
  TL_REQUIRE(a && b && out && a_count > 0 && b_count > 0,
             "tl_compare_sets: NULL argument or no file");
  TL_REQUIRE(std::all_of(a, a + a_count, [](const tl_file* f) { return f; }) &&
                 std::all_of(b, b + b_count, [](const tl_file* f) { return f; }),
             "tl_compare_sets: a NULL file");
  TL_REQUIRE(compare_options_sized(options),
             "tl_compare_files: struct_size is not that of a tl_compare_options "
             "(use tl_compare_options_init)");
  *out = nullptr;
  return guard([&] {
    const tlio::CompareOptions o = compare_options(options);
    // Handles on the same sources (the library's compare takes each side as a run of files).
    const auto files = [](const tl_file* const* f, size_t n) {
      std::vector<tlio::File> shared;
      for (size_t i = 0; i < n; ++i) shared.push_back(f[i]->file.share());
      return shared;
    };
    auto c = std::make_unique<tl_comparison>();
    c->report = tlio::compare_files(files(a, a_count), files(b, b_count), o);
    *out = c.release();
  });
}

int tl_compare_locations(const char* a, const char* b, const tl_compare_options* options,
                         const tl_open_options* open, tl_comparison** out) {
  TL_REQUIRE(a && b && out, "tl_compare_locations: NULL argument");
  TL_REQUIRE(compare_options_sized(options),
             "tl_compare_locations: struct_size is not that of a tl_compare_options "
             "(use tl_compare_options_init)");
  tlio::OpenOptions how;
  if (open)
    if (int rc = open_options(open, "tl_compare_locations", how); rc != TL_OK) return rc;
  *out = nullptr;
  return guard([&] {
    tlio::CompareOptions o = compare_options(options);
    o.quantization_config_a.clear();  // compare_weights applies the folders' own
    o.quantization_config_b.clear();
    const std::unique_ptr<const tlio::Weights> wa = tlio::Weights::open(a, how),
                                               wb = tlio::Weights::open(b, how);
    auto c = std::make_unique<tl_comparison>();
    c->report = tlio::compare_weights(*wa, *wb, o);
    *out = c.release();
  });
}

const char* tl_comparison_b_name(const tl_comparison* comparison, size_t index) {
  if (!comparison || index >= comparison->report.tensors.size()) return nullptr;
  const std::string& name = comparison->report.tensors[index].b_name;
  return name.empty() ? nullptr : name.c_str();
}

int tl_comparison_equal(const tl_comparison* comparison) {
  return comparison && comparison->report.equal ? 1 : 0;
}

size_t tl_comparison_count(const tl_comparison* comparison) {
  return comparison ? comparison->report.tensors.size() : 0;
}

int tl_comparison_at(const tl_comparison* comparison, size_t index, tl_tensor_comparison* out) {
  TL_REQUIRE(comparison && out, "tl_comparison_at: NULL argument");
  TL_REQUIRE(index < comparison->report.tensors.size(), "tl_comparison_at: index out of range");
  const tlio::TensorComparison& c = comparison->report.tensors[index];
  *out = {c.name.c_str(), c.a_dtype.c_str(),  c.b_dtype.c_str(), c.shape.size(), c.shape.data(),
          c.elements,     c.compared ? 1 : 0, c.note.c_str(),    c.max_abs,      c.max_rel,
          c.rmse,         c.cosine,           c.outside,         c.equal ? 1 : 0};
  return TL_OK;
}

static const std::vector<std::string>* only_side(const tl_comparison* comparison, int side) {
  if (!comparison || (side != 0 && side != 1)) return nullptr;
  return side == 0 ? &comparison->report.only_in_a : &comparison->report.only_in_b;
}

size_t tl_comparison_only_count(const tl_comparison* comparison, int side) {
  const std::vector<std::string>* names = only_side(comparison, side);
  return names ? names->size() : 0;
}

const char* tl_comparison_only_at(const tl_comparison* comparison, int side, size_t index) {
  const std::vector<std::string>* names = only_side(comparison, side);
  return names && index < names->size() ? (*names)[index].c_str() : nullptr;
}

void tl_comparison_free(tl_comparison* comparison) { delete comparison; }

void tl_edit_options_init(tl_edit_options* options) {
  if (!options) return;
  *options = tl_edit_options{};
  options->struct_size = sizeof(tl_edit_options);
}

static constexpr size_t kEditOptionsFirstSize = sizeof(tl_edit_options);

int tl_edit_file(const char* src, const char* dst, const tl_edit_options* options,
                 tl_edit_report* report) {
  TL_REQUIRE(src && options, "tl_edit_file: NULL argument");
  TL_REQUIRE(
      options->struct_size >= kEditOptionsFirstSize &&
          options->struct_size <= sizeof(tl_edit_options),
      "tl_edit_file: struct_size is not that of a tl_edit_options (use tl_edit_options_init)");
  const tl_edit_options& c = *options;
  const auto given = [](const char* const* array, size_t count) { return count == 0 || array; };
  TL_REQUIRE(given(c.set_keys, c.set_count) && given(c.set_values, c.set_count) &&
                 given(c.delete_keys, c.delete_count) && given(c.keep, c.keep_count) &&
                 given(c.drop, c.drop_count) && given(c.rename_patterns, c.rename_count) &&
                 given(c.rename_replacements, c.rename_count),
             "tl_edit_file: an array is NULL but its count is not 0");
  const auto strings = [](const char* const* array, size_t count) {
    std::vector<std::string> out;
    for (size_t i = 0; i < count; ++i) {
      if (!array[i]) tlio::throw_invalid("tl_edit_file: a NULL string in an array");
      out.emplace_back(array[i]);
    }
    return out;
  };
  return guard([&] {
    tlio::EditOptions o;
    const std::vector<std::string> keys = strings(c.set_keys, c.set_count),
                                   values = strings(c.set_values, c.set_count);
    for (size_t i = 0; i < keys.size(); ++i) o.set_metadata[keys[i]] = values[i];
    o.delete_metadata = strings(c.delete_keys, c.delete_count);
    o.tensors.keep = strings(c.keep, c.keep_count);
    o.tensors.drop = strings(c.drop, c.drop_count);
    const std::vector<std::string> patterns = strings(c.rename_patterns, c.rename_count),
                                   replacements = strings(c.rename_replacements, c.rename_count);
    for (size_t i = 0; i < patterns.size(); ++i)
      o.tensors.rename.emplace_back(patterns[i], replacements[i]);
    if (c.progress) {
      const tl_progress_fn fn = c.progress;
      void* user = c.progress_user;
      o.progress = [fn, user](uint64_t done, uint64_t total) { fn(done, total, user); };
    }
    if (c.token) o.open.token = c.token;
    const tlio::EditReport r = tlio::edit_weights(src, dst ? dst : "", o);
    if (report) *report = {r.kept, r.dropped, r.renamed, r.in_place ? 1 : 0, r.data_bytes};
  });
}

}  // extern "C"
