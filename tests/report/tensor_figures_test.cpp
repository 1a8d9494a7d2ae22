// Tests for tensor_figures and reports: figures and errors against sums written out here, NaN
// and infinities counted apart, layers read from names, names missing from the reference and
// shapes that differ, figures that do not depend on the number of threads, and the JSON and
// HTML made of a report.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "tlio/convert.hpp"
#include "tlio/error.hpp"
#include "tlio/report.hpp"
#include "tlio/writer.hpp"

namespace tlio {
namespace {

using test::read_bytes;
using test::TempDir;

std::vector<float> wave(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(static_cast<float>(i) * 0.37f) + 0.01f * static_cast<float>(i % 7);
  return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  convert(Dtype::F32, std::as_bytes(std::span(v)), Dtype::BF16,
          std::as_writable_bytes(std::span(out)), v.size());
  return out;
}

std::vector<float> from_bf16(const std::vector<uint16_t>& v) {
  std::vector<float> out(v.size());
  convert(Dtype::BF16, std::as_bytes(std::span(v)), Dtype::F32,
          std::as_writable_bytes(std::span(out)), v.size());
  return out;
}

const TensorFigures& find(const std::vector<TensorFigures>& figures, const std::string& name) {
  for (const TensorFigures& f : figures)
    if (f.name == name) return f;
  throw std::runtime_error("no figures for " + name);
}

TEST(TensorFigures, StatsHistogramAndErrorOfABF16Copy) {
  TempDir dir;
  const std::vector<float> w = wave(3000, 2);
  const std::vector<uint16_t> bf = to_bf16(w);
  save_file(dir / "a.safetensors",
            std::vector<TensorData>{
                {"model.layers.3.w", Dtype::BF16, {30, 100}, std::as_bytes(std::span(bf))}});
  save_file(dir / "b.safetensors",
            std::vector<TensorData>{
                {"model.layers.3.w", Dtype::F32, {30, 100}, std::as_bytes(std::span(w))}});
  const auto a_owner = Weights::open((dir / "a.safetensors").string());
  const Weights& a = *a_owner;
  const auto b_owner = Weights::open((dir / "b.safetensors").string());
  const Weights& b = *b_owner;
  FigureOptions o;
  o.bins = 8;
  o.reference = &b;
  const std::vector<std::string> names{"model.layers.3.w"};
  const std::vector<TensorFigures> figures = tensor_figures(a, names, o);
  ASSERT_EQ(figures.size(), 1u);
  const TensorFigures& f = figures[0];
  EXPECT_EQ(f.type, "BF16");
  EXPECT_EQ(f.shape, (std::vector<uint64_t>{30, 100}));
  EXPECT_EQ(f.elements, 3000u);
  EXPECT_EQ(f.stored_bytes, 6000u);
  ASSERT_TRUE(f.layer);
  EXPECT_EQ(*f.layer, 3u);

  const std::vector<float> av = from_bf16(bf);
  double lo = INFINITY, hi = -INFINITY, sum = 0, d2 = 0, a2 = 0, b2 = 0, ab = 0, max_abs = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    const double x = av[i], y = w[i], d = x - y;
    lo = std::min(lo, x), hi = std::max(hi, x), sum += x;
    d2 += d * d, a2 += x * x, b2 += y * y, ab += x * y, max_abs = std::max(max_abs, std::fabs(d));
  }
  const double mean = sum / 3000;
  double m2 = 0;
  for (float x : av) m2 += (x - mean) * (x - mean);
  EXPECT_EQ(f.stats.min, lo);
  EXPECT_EQ(f.stats.max, hi);
  EXPECT_NEAR(f.stats.mean, mean, 1e-12);
  EXPECT_NEAR(f.stats.std_dev(), std::sqrt(m2 / 3000), 1e-12);
  std::vector<uint64_t> bins(8, 0);
  for (float x : av) ++bins[std::min<size_t>(7, static_cast<size_t>((x - lo) / (hi - lo) * 8))];
  EXPECT_EQ(f.histogram, bins);

  ASSERT_TRUE(f.error);
  const TensorError& e = *f.error;
  EXPECT_EQ(e.reference, "model.layers.3.w");
  EXPECT_EQ(e.reference_type, "F32");
  EXPECT_EQ(e.max_abs, max_abs);
  EXPECT_NEAR(e.rmse, std::sqrt(d2 / 3000), 1e-15);
  EXPECT_NEAR(e.cosine, ab / std::sqrt(a2 * b2), 1e-12);
  EXPECT_NEAR(e.sqnr_db, 10 * std::log10(b2 / d2), 1e-9);
  EXPECT_GT(e.sqnr_db, 40);  // BF16 keeps 8 bits: about 50 dB
  EXPECT_EQ(e.nonfinite, 0u);
}

TEST(TensorFigures, NonFinitePairsAreCountedApart) {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  const std::vector<float> a{1, nan, inf, 4, nan, 0}, b{1, nan, inf, 5, 2, 0};
  save_file(dir / "a.safetensors",
            std::vector<TensorData>{{"t", Dtype::F32, {6}, std::as_bytes(std::span(a))}});
  save_file(dir / "b.safetensors",
            std::vector<TensorData>{{"t", Dtype::F32, {6}, std::as_bytes(std::span(b))}});
  const auto wa_owner = Weights::open((dir / "a.safetensors").string());
  const Weights& wa = *wa_owner;
  const auto wb_owner = Weights::open((dir / "b.safetensors").string());
  const Weights& wb = *wb_owner;
  const std::vector<std::string> names{"t"};
  const TensorFigures f =
      tensor_figures(wa, names, {.bins = 4, .reference = &wb, .progress = {}})[0];
  EXPECT_EQ(f.stats.nan, 2u);
  EXPECT_EQ(f.stats.inf, 1u);
  EXPECT_EQ(f.stats.zero, 1u);
  EXPECT_FALSE(f.layer);
  ASSERT_TRUE(f.error);
  EXPECT_EQ(f.error->nonfinite, 3u);                      // NaN/NaN, inf/inf, NaN/2
  EXPECT_EQ(f.error->nonfinite_mismatch, 1u);             // NaN against 2
  EXPECT_EQ(f.error->max_abs, INFINITY);                  // NaN against 2, as diff counts it
  EXPECT_EQ(f.error->sqnr_db, -INFINITY);                 // the worst, not "identical"
  EXPECT_NEAR(f.error->rmse, std::sqrt(1.0 / 3), 1e-15);  // (1,1), (4,5), (0,0)
}

TEST(TensorFigures,
     NamesTheReferenceLacksOrShapesThatDifferHaveNoError) {  // [3, 4] against [4, 3] too
  TempDir dir;
  const std::vector<float> v(12, 1.5f);
  save_file(dir / "a.safetensors",
            std::vector<TensorData>{{"x", Dtype::F32, {12}, std::as_bytes(std::span(v))},
                                    {"y", Dtype::F32, {3, 4}, std::as_bytes(std::span(v))}});
  save_file(dir / "b.safetensors",
            std::vector<TensorData>{{"y", Dtype::F32, {4, 3}, std::as_bytes(std::span(v))},
                                    {"z", Dtype::F32, {12}, std::as_bytes(std::span(v))}});
  ReportOptions o;
  o.reference = (dir / "b.safetensors").string();
  const ModelReport r = make_report((dir / "a.safetensors").string(), o);
  EXPECT_EQ(r.only_in_model, std::vector<std::string>{"x"});
  EXPECT_EQ(r.only_in_reference, std::vector<std::string>{"z"});
  const TensorFigures& x = find(r.tensors, "x");
  EXPECT_FALSE(x.error);
  EXPECT_TRUE(x.note.empty());
  const TensorFigures& y = find(r.tensors, "y");
  EXPECT_FALSE(y.error);
  EXPECT_NE(y.note.find("shapes differ"), std::string::npos) << y.note;
  // One value: all in the first bin, as numpy.
  EXPECT_EQ(x.histogram[0], 12u);
  EXPECT_EQ(r.parameters, 24u);
}

TEST(TensorFigures, FiguresDoNotDependOnTheThreads) {
  TempDir dir;
  const std::vector<float> w = wave(5'300'000, 3), v = wave(5'300'000, 2.9f);  // 6 chunks
  save_file(dir / "a.safetensors",
            std::vector<TensorData>{{"w", Dtype::F32, {5'300'000}, std::as_bytes(std::span(w))}});
  save_file(dir / "b.safetensors",
            std::vector<TensorData>{{"w", Dtype::F32, {5'300'000}, std::as_bytes(std::span(v))}});
  const auto a_owner = Weights::open((dir / "a.safetensors").string());
  const Weights& a = *a_owner;
  const auto b_owner = Weights::open((dir / "b.safetensors").string());
  const Weights& b = *b_owner;
  const std::vector<std::string> names{"w"};
  set_conversion_threads(1);
  const TensorFigures one =
      tensor_figures(a, names, {.bins = 64, .reference = &b, .progress = {}})[0];
  set_conversion_threads(0);
  uint64_t calls = 0, last = 0, total = 0;
  const TensorFigures many = tensor_figures(
      a, names, {.bins = 64, .reference = &b, .progress = [&](uint64_t d, uint64_t t) {
                   ++calls, last = d, total = t;
                 }})[0];
  EXPECT_EQ(one.stats.mean, many.stats.mean);
  EXPECT_EQ(one.stats.m2, many.stats.m2);
  EXPECT_EQ(one.histogram, many.histogram);
  EXPECT_EQ(one.error->rmse, many.error->rmse);
  EXPECT_EQ(one.error->cosine, many.error->cosine);
  EXPECT_GT(calls, 0u);
  EXPECT_EQ(last, total);
}

TEST(TensorFigures, BinsOutsideTheirRangeAndUnknownNamesAreRefused) {
  TempDir dir;
  const std::vector<float> v(4, 1);
  save_file(dir / "a.safetensors",
            std::vector<TensorData>{{"x", Dtype::F32, {4}, std::as_bytes(std::span(v))}});
  const auto a_owner = Weights::open((dir / "a.safetensors").string());
  const Weights& a = *a_owner;
  const std::vector<std::string> x{"x"}, y{"y"};
  try {
    tensor_figures(a, x, {.bins = 0, .reference = nullptr, .progress = {}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
  try {
    tensor_figures(a, y);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::not_found);
    EXPECT_NE(std::string(e.what()).find("did you mean \"x\""), std::string::npos) << e.what();
  }
}

TEST(Report, JsonAndPageHoldEveryTensor) {
  TempDir dir;
  const std::vector<float> v = wave(64, 1);
  const std::vector<uint8_t> flags{1, 0, 1};
  save_file(dir / "m.safetensors",
            std::vector<TensorData>{
                {"model.layers.0.<script>", Dtype::F32, {8, 8}, std::as_bytes(std::span(v))},
                {"model.layers.1.w", Dtype::F32, {64}, std::as_bytes(std::span(v))},
                {"mask", Dtype::BOOL, {3}, std::as_bytes(std::span(flags))}},
            {{"format", "pt"}});
  const ModelReport r = make_report((dir / "m.safetensors").string());
  EXPECT_EQ(r.format, "safetensors");
  EXPECT_EQ(r.files, 1u);
  EXPECT_EQ(r.parameters, 131u);

  simdjson::dom::parser parser;
  const std::string json = report_json(r);
  simdjson::dom::element doc = parser.parse(json);
  EXPECT_EQ(std::string_view(doc["format"]), "safetensors");
  EXPECT_TRUE(doc["reference"].is_null());
  simdjson::dom::array tensors = doc["tensors"];
  EXPECT_EQ(tensors.size(), 3u);
  EXPECT_EQ(std::string_view(doc["metadata"]["format"]), "pt");

  const std::string page = report_html(r);
  size_t histograms = 0;
  for (size_t at = 0; (at = page.find("<svg class=\"hist\"", at)) != std::string::npos; ++at)
    ++histograms;
  EXPECT_EQ(histograms, 3u);  // BOOL has numeric values (0 and 1)
  EXPECT_EQ(page.find("<script>\nfor"), page.find("<script>"));  // the one script is the page's own
  EXPECT_NE(page.find("model.layers.0.&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);

  write_report_html(r, (dir / "r.html").string());
  EXPECT_EQ(read_bytes(dir / "r.html").size(), page.size());
}

}  // namespace
}  // namespace tlio
