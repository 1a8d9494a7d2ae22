// capi/model.cpp: the C API of tlio/model.hpp and read_plan.hpp (model directories, read plans).
#include "capi/handles.hpp"

using namespace tlio::capi;

extern "C" {

int tl_model_open(const char* dir, tl_model** out) {
  tl_open_options o;
  tl_open_options_init(&o);
  return tl_model_open_with(dir, &o, out);
}

int tl_model_open_with(const char* dir, const tl_open_options* options, tl_model** out) {
  TL_REQUIRE(dir && out, "tl_model_open: NULL argument");
  *out = nullptr;
  tlio::OpenOptions o;
  if (int rc = open_options(options, "tl_model_open_with", o)) return rc;
  return guard([&] {
    auto m = std::make_unique<tl_model>(tl_model{tlio::Model::open(dir, o), {}});
    for (const tlio::File& f : m->model.files()) {
      m->files.push_back(std::make_unique<tl_file>(f, tl_file::Borrowed{}));
      index_metadata(*m->files.back());
    }
    *out = m.release();
  });
}

void tl_model_close(tl_model* model) { delete model; }

const char* tl_model_arch(const tl_model* model) {
  return model ? model->model.config().arch.c_str() : "";
}

const char* tl_model_quantization_config(const tl_model* model) {
  return model ? model->model.quantization_config().c_str() : "";
}

int tl_model_check(const tl_model* model) {
  TL_REQUIRE(model, "tl_model_check: NULL argument");
  return guard([&] { model->model.check(); });
}

size_t tl_model_file_count(const tl_model* model) { return model ? model->files.size() : 0; }

const tl_file* tl_model_file(const tl_model* model, size_t i) {
  return model && i < model->files.size() ? model->files[i].get() : nullptr;
}

int tl_model_find(const tl_model* model, const char* name, const tl_file** file, size_t* index) {
  TL_REQUIRE(model && name && file && index, "tl_model_find: NULL argument");
  return guard([&] {
    const tlio::ModelTensor* t = model->model.find(name);
    if (!t) (void)model->model.view(name);  // throws the library's not-found error
    *file = model->files[t->file].get();
    *index = static_cast<size_t>(t->info - model->model.files()[t->file].tensors().data());
  });
}

// ---- read plans ------------------------------------------------------------------------------

struct tl_plan {
  tlio::ReadPlan plan;
  std::vector<tlio::PlannedRead> reads;  // tl_plan_reads' last answer
};

void tl_plan_options_init(tl_plan_options* options) {
  if (!options) return;
  *options = tl_plan_options{};
  options->struct_size = sizeof(tl_plan_options);
  options->max_gap = -1;
}

int tl_plan_open(const char* source, const tl_plan_options* options, tl_plan** out) {
  return tl_plan_open_ex(source, options, 0, out);
}

int tl_plan_open_ex(const char* source, const tl_plan_options* options, unsigned flags,
                    tl_plan** out) {
  TL_REQUIRE(source && out, "tl_plan_open: NULL argument");
  TL_REQUIRE((flags & ~TL_OPEN_DIRECT) == 0, "tl_plan_open_ex: flags may be 0 or TL_OPEN_DIRECT");
  *out = nullptr;
  tlio::ReadPlanOptions o;
  if (options) {
    TL_REQUIRE(
        options->struct_size == sizeof(tl_plan_options),
        "tl_plan_open: struct_size is not that of a tl_plan_options (use tl_plan_options_init)");
    TL_REQUIRE(options->max_gap >= -1, "tl_plan_open: max_gap is below -1");
    if (options->max_inflight_bytes) o.max_inflight_bytes = options->max_inflight_bytes;
    if (options->max_gap >= 0) o.max_gap = static_cast<uint64_t>(options->max_gap);
    o.keep_packed = options->keep_packed != 0;
    o.open.token = options->token ? options->token : "";
  }
  if (flags & TL_OPEN_DIRECT) o.open.backend = tlio::Backend::direct;
  return guard([&] { *out = new tl_plan{tlio::ReadPlan::open(source, std::move(o)), {}}; });
}

void tl_plan_free(tl_plan* plan) { delete plan; }

int tl_plan_add(tl_plan* plan, const char* name, size_t rank, const uint64_t* starts,
                const uint64_t* stops, int dtype, size_t* item) {
  TL_REQUIRE(plan && name && item && (rank == 0 || (starts && stops)),
             "tl_plan_add: NULL argument");
  return guard([&] {
    std::vector<tlio::SliceIndex> slice;
    for (size_t d = 0; d < rank; ++d) slice.push_back(tlio::SliceIndex::range(starts[d], stops[d]));
    std::optional<tlio::Dtype> as;
    if (dtype >= 0) {
      if (!valid_dtype(static_cast<tl_dtype>(dtype)))
        tlio::throw_invalid("tl_plan_add: unknown dtype");
      as = static_cast<tlio::Dtype>(dtype);
    }
    *item = plan->plan.add(name, slice, as);
  });
}

int tl_plan_item(const tl_plan* plan, size_t item, tl_plan_item_info* out) {
  TL_REQUIRE(plan && out, "tl_plan_item: NULL argument");
  TL_REQUIRE(item < plan->plan.items().size(), "tl_plan_item: no such item");
  const tlio::PlanItem& i = plan->plan.items()[item];
  out->rank = i.shape.size();
  out->shape = i.shape.data();
  out->dtype = static_cast<tl_dtype>(i.dtype);
  out->byte_size = i.byte_size;
  return TL_OK;
}

static_assert(TL_DIRECT_ALIGNMENT == tlio::kDirectAlignment);

int tl_plan_item_range(const tl_plan* plan, size_t item, size_t* file, uint64_t* offset) {
  TL_REQUIRE(plan && file && offset, "tl_plan_item_range: NULL argument");
  TL_REQUIRE(item < plan->plan.items().size(), "tl_plan_item_range: no such item");
  const std::optional<tlio::PlanItemRange>& r = plan->plan.items()[item].stored;
  *file = r ? r->file : 0;
  *offset = r ? r->offset : UINT64_MAX;
  return TL_OK;
}

int tl_plan_set_destination(tl_plan* plan, size_t item, void* dst, size_t size) {
  TL_REQUIRE(plan && (dst || size == 0), "tl_plan_set_destination: NULL argument");
  return guard([&] { plan->plan.set_destination(item, {static_cast<std::byte*>(dst), size}); });
}

int tl_plan_reads(tl_plan* plan, size_t* count, uint64_t* wanted_bytes) {
  TL_REQUIRE(plan && count, "tl_plan_reads: NULL argument");
  return guard([&] {
    plan->reads = plan->plan.reads();
    *count = plan->reads.size();
    if (wanted_bytes) *wanted_bytes = plan->plan.wanted_bytes();
  });
}

int tl_plan_read_at(const tl_plan* plan, size_t index, size_t* file, uint64_t* offset,
                    uint64_t* length) {
  TL_REQUIRE(plan && file && offset && length, "tl_plan_read_at: NULL argument");
  TL_REQUIRE(index < plan->reads.size(),
             "tl_plan_read_at: no such read (call tl_plan_reads first)");
  const tlio::PlannedRead& r = plan->reads[index];
  *file = r.file;
  *offset = r.offset;
  *length = r.length;
  return TL_OK;
}

int tl_plan_clear(tl_plan* plan) {
  TL_REQUIRE(plan, "tl_plan_clear: NULL argument");
  plan->plan.clear();
  plan->reads.clear();
  return TL_OK;
}

int tl_plan_execute(tl_plan* plan) {
  TL_REQUIRE(plan, "tl_plan_execute: NULL argument");
  return guard([&] { plan->plan.execute(); });
}

int tl_plan_deliver(tl_plan* plan, size_t file, uint64_t offset, const void* data, size_t size) {
  TL_REQUIRE(plan && (data || size == 0), "tl_plan_deliver: NULL argument");
  return guard([&] {
    plan->plan.deliver(file, offset, {static_cast<const std::byte*>(data), size});
  });
}

int tl_plan_finish(tl_plan* plan) {
  TL_REQUIRE(plan, "tl_plan_finish: NULL argument");
  return guard([&] { plan->plan.finish(); });
}

}  // extern "C"
