// report/report_html.cpp: a report as one self-contained HTML page: a summary, charts by layer
// (outliers; errors against the reference), and a table of every tensor with its histogram,
// sortable by any column. Inline SVG and CSS and a few lines of script: the page fetches nothing.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "report/report_figures.hpp"
#include "tlio/report.hpp"

namespace tlio {
namespace {

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string bytes_text(uint64_t n) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.2f} {}", v, kUnits[u]);
}

std::string count_text(uint64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f} B", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
  if (n >= 1'000) return fmt::format("{:.1f} k", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

std::string figure(double v) {
  return std::isnan(v) ? "" : std::isinf(v) ? (v > 0 ? "∞" : "-∞") : fmt::format("{:.4g}", v);
}

// A table cell sorted by `v` (NaN sorts last).
std::string number_cell(double v, const std::string& text, const char* cls = "") {
  return fmt::format("<td class=\"num{}\" data-v=\"{}\">{}</td>", cls,
                     std::isnan(v)   ? "NaN"
                     : std::isinf(v) ? (v > 0 ? "Infinity" : "-Infinity")
                                     : fmt::format("{}", v),
                     text);
}

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
constexpr size_t kColors = std::size(kPalette);

// The tensor kinds (names with the layer made "*") in order of how many tensors each has, and
// the colour of each: the nine most common get one, the others share the palette's last, grey.
std::map<std::string, std::string> kind_colours(const ModelReport& r) {
  std::map<std::string, size_t> counts;
  for (const TensorFigures& t : r.tensors) ++counts[detail::kind_of(t.name)];
  std::vector<std::pair<std::string, size_t>> order(counts.begin(), counts.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < order.size(); ++i)
    out[order[i].first] = kPalette[std::min(i, kColors - 1)];
  return out;
}

struct Point {
  double x, y;
  const TensorFigures* tensor;
};

// A chart of one figure per tensor over the layer index (tensors of no layer at the right, past
// a gap), one series per kind; `log_y` draws the figure on a log scale. Points whose figure is
// not finite (or not positive on a log scale) are left out and counted under the chart.
std::string layer_chart(const ModelReport& r, const std::string& id, const std::string& y_label,
                        bool log_y, const std::function<double(const TensorFigures&)>& value,
                        const char* no_figure) {
  const std::map<std::string, std::string> colours = kind_colours(r);
  uint64_t last_layer = 0;
  bool any_layer = false, any_other = false;
  for (const TensorFigures& t : r.tensors)
    if (t.layer) last_layer = std::max(last_layer, *t.layer), any_layer = true;
  std::map<std::string, std::vector<Point>> series;
  size_t left_out = 0;
  for (const TensorFigures& t : r.tensors) {
    if (!t.numeric) continue;
    const double v = value(t);
    if (!std::isfinite(v) || (log_y && !(v > 0))) {
      ++left_out;
      continue;
    }
    any_other = any_other || !t.layer;
    const double x = t.layer ? static_cast<double>(*t.layer)
                             : static_cast<double>(last_layer) + (any_layer ? 2 : 0);
    series[detail::kind_of(t.name)].push_back({x, log_y ? std::log10(v) : v, &t});
  }
  if (series.empty())
    return fmt::format("<p class=\"empty\">No tensor to draw: {}.</p>\n", no_figure);
  double y0 = INFINITY, y1 = -INFINITY, x1 = 0;
  for (const auto& [kind, points] : series)
    for (const Point& p : points)
      y0 = std::min(y0, p.y), y1 = std::max(y1, p.y), x1 = std::max(x1, p.x);
  if (y1 - y0 < 1e-9) y0 -= 1, y1 += 1;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad, y1 += pad;
  constexpr double W = 960, H = 320, L = 64, R = 16, T = 12, B = 40;
  const auto sx = [&](double x) { return L + (x1 > 0 ? x / x1 : 0.5) * (W - L - R); };
  const auto sy = [&](double y) { return T + (y1 - y) / (y1 - y0) * (H - T - B); };
  std::string svg = fmt::format(
      "<svg class=\"chart\" id=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">\n", id,
      W, H, escape(y_label));
  svg += fmt::format("<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n", L, T,
                     W - L - R, H - T - B);
  for (int i = 0; i <= 4; ++i) {  // y grid and labels
    const double y = y0 + (y1 - y0) * i / 4;
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick\" x=\"{}\" "
        "y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        L, W - R, sy(y), sy(y), L - 6, sy(y) + 4, figure(log_y ? std::pow(10.0, y) : y));
  }
  const uint64_t step = std::max<uint64_t>(1, (last_layer + 16) / 16);
  if (any_layer)
    for (uint64_t l = 0; l <= last_layer; l += step)
      svg += fmt::format(
          "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
          sx(static_cast<double>(l)), H - B + 16, l);
  if (any_other)
    svg += fmt::format(
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">other</text>\n",
        sx(static_cast<double>(last_layer) + (any_layer ? 2 : 0)), H - B + 16);
  svg += fmt::format("<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">layer</text>\n",
                     (L + W - R) / 2, H - 6);
  svg += fmt::format(
      "<text class=\"axis\" transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      (T + H - B) / 2, escape(y_label));
  std::string legend;
  for (auto& [kind, points] : series) {
    const std::string& colour = colours.at(kind);
    std::stable_sort(points.begin(), points.end(),
                     [](const Point& a, const Point& b) { return a.x < b.x; });
    svg += fmt::format("<g class=\"series\" data-kind=\"{}\" stroke=\"{}\" fill=\"{}\">",
                       escape(kind), colour, colour);
    if (points.size() > 1) {
      std::string line;
      for (const Point& p : points)
        if (p.tensor->layer) line += fmt::format("{:.1f},{:.1f} ", sx(p.x), sy(p.y));
      if (!line.empty()) svg += fmt::format("<polyline fill=\"none\" points=\"{}\"/>", line);
    }
    for (const Point& p : points)
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"><title>{}: {}</title></circle>", sx(p.x),
          sy(p.y), escape(p.tensor->name), figure(log_y ? std::pow(10.0, p.y) : p.y));
    svg += "</g>\n";
    legend += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", colour, escape(kind));
  }
  svg += "</svg>\n";
  std::string out = svg + "<div class=\"legend\">" + legend + "</div>\n";
  if (left_out)
    out += fmt::format("<p class=\"note\">{} tensor{} not drawn: {}.</p>\n", left_out,
                       left_out == 1 ? "" : "s", no_figure);
  return out;
}

// A tensor's histogram as a small SVG: one bar per bin, heights on a log scale of counts.
std::string histogram_svg(const TensorFigures& t) {
  const size_t n = t.histogram.size();
  const uint64_t top = n ? *std::max_element(t.histogram.begin(), t.histogram.end()) : 0;
  std::string path;
  constexpr double H = 30;
  for (size_t i = 0; i < n && top > 0; ++i) {
    if (t.histogram[i] == 0) continue;
    const double h = std::max(1.0, H * std::log10(1.0 + static_cast<double>(t.histogram[i])) /
                                       std::log10(1.0 + static_cast<double>(top)));
    path += fmt::format("M{} {}h2v{:.1f}h-2z", 2 * i, H + 1, -h);
  }
  const std::string title = top == 0 ? std::string("no finite value to count")
                                     : fmt::format("{} .. {} in {} bins, log counts",
                                                   figure(t.stats.min), figure(t.stats.max), n);
  return fmt::format(
      "<svg class=\"hist\" data-name=\"{}\" viewBox=\"0 0 {} 32\" preserveAspectRatio=\"none\">"
      "<title>{}</title><path d=\"{}\"/></svg>",
      escape(t.name), std::max<size_t>(2 * n, 2), title, path);
}

std::string tensor_row(const TensorFigures& t, bool with_reference) {
  const ValueStats& s = t.stats;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::string row = fmt::format("<tr><td class=\"name\">{}</td>", escape(t.name));
  row += t.layer ? number_cell(static_cast<double>(*t.layer), std::to_string(*t.layer))
                 : number_cell(nan, "");
  row += fmt::format("<td>{}</td><td>[{}]</td>", escape(t.type), fmt::join(t.shape, ", "));
  row += number_cell(static_cast<double>(t.elements), count_text(t.elements));
  row += number_cell(static_cast<double>(t.stored_bytes), bytes_text(t.stored_bytes));
  const bool figures = t.numeric && s.finite() > 0;
  for (double v : {s.min, s.max, s.mean, s.std_dev(), detail::max_over_std(s)})
    row += figures ? number_cell(v, figure(v)) : number_cell(nan, "");
  const auto count_cell = [&](uint64_t c, bool bad) {
    return t.numeric ? number_cell(static_cast<double>(c), count_text(c), bad && c ? " bad" : "")
                     : number_cell(nan, "");
  };
  row += count_cell(s.nan, true) + count_cell(s.inf, true) + count_cell(s.zero, false);
  if (with_reference) {
    if (t.error) {
      const TensorError& e = *t.error;
      row += number_cell(e.rmse, figure(e.rmse)) + number_cell(e.max_abs, figure(e.max_abs)) +
             number_cell(e.cosine, fmt::format("{:.6f}", e.cosine)) +
             number_cell(e.sqnr_db, figure(e.sqnr_db)) +
             number_cell(static_cast<double>(e.nonfinite_mismatch),
                         count_text(e.nonfinite_mismatch), e.nonfinite_mismatch ? " bad" : "");
    } else {
      const std::string why =
          t.note.empty() ? (t.numeric ? "not in the reference" : "no numeric values") : t.note;
      // As many cells as every row has, so that sorting finds each column at its index.
      row += fmt::format("<td class=\"why\" data-v=\"NaN\">{}</td>", escape(why));
      for (int i = 0; i < 4; ++i) row += number_cell(nan, "");
    }
  }
  row += fmt::format("<td>{}</td></tr>\n", t.numeric ? histogram_svg(t) : "");
  return row;
}

constexpr const char* kStyle = R"(
:root{--fg:#1d2330;--muted:#5f6b7a;--line:#d9dee5;--bg:#fff;--band:#f5f7fa;--bad:#c62828}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:0;padding:24px 32px}
h1{font-size:22px;margin:0 0 4px;word-break:break-all}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.sub,.note,.empty{color:var(--muted)}table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:middle}
th{background:var(--band);position:sticky;top:0;cursor:pointer;white-space:nowrap;user-select:none}
th[data-order=asc]::after{content:" \25B2"}th[data-order=desc]::after{content:" \25BC"}
td.num{text-align:right;white-space:nowrap}td.bad{color:var(--bad);font-weight:600}td.name{font-family:ui-monospace,monospace;font-size:12px;min-width:20em;word-break:break-all}
.scroll{overflow-x:auto}#tensor-table{font-size:13px}
td.why{color:var(--muted);font-style:italic}.kv td:first-child{color:var(--muted)}
.bar{display:inline-block;height:10px;background:#1f77b4;vertical-align:middle}
svg.chart{width:100%;max-width:960px;height:auto;display:block}svg.chart .plot{fill:var(--band)}
svg.chart .grid{stroke:var(--line)}svg.chart text{font-size:11px;fill:var(--muted)}svg.chart .axis{font-size:12px}
svg.chart circle{stroke:none}svg.chart polyline{stroke-width:1.2;opacity:.55}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;max-width:960px;font-size:12px;color:var(--muted)}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
svg.hist{width:128px;height:32px;display:block;background:var(--band)}svg.hist path{fill:#1f77b4}
details{margin-top:8px}pre{white-space:pre-wrap;word-break:break-all;margin:0;font-size:12px}
)";

constexpr const char* kScript = R"(
for (const table of document.querySelectorAll('table.sortable')) {
  table.tHead.addEventListener('click', (event) => {
    const th = event.target.closest('th');
    if (!th) return;
    const column = th.cellIndex, asc = th.dataset.order !== 'asc';
    for (const h of table.tHead.rows[0].cells) delete h.dataset.order;
    th.dataset.order = asc ? 'asc' : 'desc';
    const key = (row) => {
      const cell = row.cells[column];
      return cell.dataset.v !== undefined ? Number(cell.dataset.v) : cell.textContent;
    };
    const rows = Array.from(table.tBodies[0].rows);
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      if (typeof x === 'number' && typeof y === 'number') {
        if (Number.isNaN(x) || Number.isNaN(y)) return Number.isNaN(x) - Number.isNaN(y);
        return asc ? x - y : y - x;
      }
      return asc ? String(x).localeCompare(String(y)) : String(y).localeCompare(String(x));
    });
    table.tBodies[0].append(...rows);
  });
}
)";

// At most `limit` bytes of `s`, cut before a UTF-8 sequence, then " ...".
std::string shortened(const std::string& s, size_t limit) {
  if (s.size() <= limit) return s;
  size_t end = limit;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end) + " ...";
}

std::string summary(const ModelReport& r) {
  std::string s = "<section id=\"summary\"><h2>Summary</h2><table class=\"kv\">";
  const auto kv = [&](const char* key, const std::string& value) {
    s += fmt::format("<tr><td>{}</td><td>{}</td></tr>", key, value);
  };
  kv("Format", escape(r.format));
  kv("Parameters", fmt::format("{} ({})", count_text(r.parameters), r.parameters));
  kv("Size on disk",
     fmt::format("{} in {} file{}", bytes_text(r.stored_size), r.files, r.files == 1 ? "" : "s"));
  kv("Tensors", std::to_string(r.tensors.size()));
  if (!r.reference.empty()) kv("Reference", escape(r.reference));
  s +=
      "</table>\n<h3>Types</h3><table class=\"types\"><tr><th>type</th><th>parameters</th><th>share</th></tr>";
  for (const auto& [type, n] : r.types) {
    const double share =
        r.parameters ? 100.0 * static_cast<double>(n) / static_cast<double>(r.parameters) : 0;
    s += fmt::format(
        "<tr><td>{}</td><td class=\"num\">{}</td><td><span class=\"bar\" style=\"width:{:.0f}px\"></span> {:.1f}%</td></tr>",
        escape(type), count_text(n), 2 * share, share);
  }
  s += "</table>\n";
  if (!r.metadata.empty()) {
    s += fmt::format("<details><summary>Metadata ({} key{})</summary><table class=\"kv\">",
                     r.metadata.size(), r.metadata.size() == 1 ? "" : "s");
    for (const auto& [key, value] : r.metadata)
      s += fmt::format("<tr><td>{}</td><td><pre>{}</pre></td></tr>", escape(key),
                       escape(shortened(value, 2000)));
    s += "</table></details>\n";
  }
  return s + "</section>\n";
}

std::string name_list(const char* title, const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string s = fmt::format("<details><summary>{} ({})</summary><ul>", title, names.size());
  for (const std::string& n : names) s += fmt::format("<li><code>{}</code></li>", escape(n));
  return s + "</ul></details>\n";
}

}  // namespace

std::string report_html(const ModelReport& r) {
  const bool with_reference = !r.reference.empty();
  std::string page = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><link rel=\"icon\" href=\"data:,\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><title>tlio report: {}</title><style>{}</style></head>\n<body>\n"
      "<header><h1>{}</h1><p class=\"sub\">{} &middot; {} parameters &middot; {}{}</p></header>\n",
      escape(r.name), kStyle, escape(r.name), escape(r.format), count_text(r.parameters),
      bytes_text(r.stored_size), with_reference ? " &middot; against " + escape(r.reference) : "");
  page += summary(r);
  page += "<section id=\"outliers\"><h2>Outliers by layer: max |x| / std</h2>\n";
  page += layer_chart(
      r, "outlier-chart", "max |x| / std", true,
      [](const TensorFigures& t) { return detail::max_over_std(t.stats); },
      "no spread (every value the same), no finite value, or an infinite one");
  page += "</section>\n";
  if (with_reference) {
    page += fmt::format(
        "<section id=\"error\"><h2>Error against the reference by layer: SQNR (dB, lower is worse)</h2>\n");
    page += layer_chart(
        r, "error-chart", "SQNR dB", false,
        [](const TensorFigures& t) {
          return t.error ? t.error->sqnr_db : std::numeric_limits<double>::quiet_NaN();
        },
        "identical to the reference (infinite SQNR), NaN or infinite where the reference is not or the reference "
        "all zero (-inf: see the table), or no finite pair");
    page += name_list("Only in the model", r.only_in_model) +
            name_list("Only in the reference", r.only_in_reference);
    page += "</section>\n";
  }
  page +=
      "<section id=\"tensors\"><h2>Tensors</h2><p class=\"note\">Click a heading to sort. Histograms span [min, max]; "
      "bar heights are log counts.</p>\n<div class=\"scroll\"><table class=\"sortable\" id=\"tensor-table\"><thead><tr><th>name</th><th>layer</th>"
      "<th>type</th><th>shape</th><th>params</th><th>stored</th><th>min</th><th>max</th><th>mean</th><th>std</th>"
      "<th>max|x|/std</th><th>NaN</th><th>inf</th><th>zero</th>";
  if (with_reference)
    page += "<th>RMSE</th><th>max abs err</th><th>cosine</th><th>SQNR dB</th><th>NaN/inf &ne;</th>";
  page += "<th>histogram</th></tr></thead><tbody>\n";
  for (const TensorFigures& t : r.tensors) page += tensor_row(t, with_reference);
  page += fmt::format("</tbody></table></div></section>\n<script>{}</script>\n</body></html>\n",
                      kScript);
  return page;
}

}  // namespace tlio
