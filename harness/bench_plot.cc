// `collcheck bench`'s SVG plot of a report: busbw against size on a log2 axis, a line per backend
// and placement, and the memory-copy bandwidth as a horizontal yardstick.
#include "harness/bench.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "harness/html_page.h"
#include "reference/bandwidth.h"
#include "reference/numbers.h"

namespace collcheck::bench {

// SVG: a plot area of kPlotWidth x kPlotHeight inside margins for the axes' labels.
namespace {

constexpr double kLeft = 70, kTop = 40, kPlotWidth = 640, kPlotHeight = 360, kRight = 200, kBottom = 50;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};

using html::xml_text;

std::string bytes_label(double log2_bytes) {
  const auto bytes = static_cast<std::uint64_t>(std::llround(std::exp2(log2_bytes)));
  constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  std::size_t unit = 0;
  std::uint64_t shown = bytes;
  while (shown >= 1024 && shown % 1024 == 0 && unit + 1 < std::size(kUnits)) {
    shown /= 1024;
    ++unit;
  }
  return std::to_string(shown) + kUnits[unit];
}

struct Axes {
  double x_low = 0, x_high = 1, y_high = 1;
  double x(double log2_bytes) const { return kLeft + (log2_bytes - x_low) / (x_high - x_low) * kPlotWidth; }
  double y(double busbw) const { return kTop + kPlotHeight - busbw / y_high * kPlotHeight; }
};

// A round step (1, 2 or 5 times a power of ten) giving about five ticks up to `high`.
double tick_step(double high) {
  const double raw = high / 5;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

Axes fit_axes(const Report& report) {
  Axes axes;
  double low = std::numeric_limits<double>::infinity(), high = -low, top = report.memory.bandwidth;
  for (const Row& row : report.rows) {
    const std::size_t bytes = algorithm_bytes(row.out_of_place);
    if (bytes == 0) continue;
    low = std::min(low, std::log2(static_cast<double>(bytes)));
    high = std::max(high, std::log2(static_cast<double>(bytes)));
    for (const Measurement* m : {&row.out_of_place_result, &row.in_place_result})
      top = std::max(top, m->bandwidth.busbw);
  }
  if (low > high) low = 0, high = 1;
  if (high - low < 1) high = low + 1;
  axes.x_low = std::floor(low);
  axes.x_high = std::ceil(high);
  axes.y_high = top > 0 ? std::ceil(top * 1.1 / tick_step(top * 1.1)) * tick_step(top * 1.1) : 1;
  return axes;
}

void write_axes(std::ostream& out, const Axes& axes) {
  const double bottom = kTop + kPlotHeight;
  out << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << kPlotWidth << "\" height=\"" << kPlotHeight
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
  const double span = axes.x_high - axes.x_low;
  const double every = std::max(1.0, std::ceil(span / 12));
  // Ticks are counted, not summed, so rounding cannot add or drop the last one.
  for (int tick = 0; axes.x_low + tick * every <= axes.x_high + 1e-9; ++tick) {
    const double v = axes.x_low + tick * every;
    out << "<line x1=\"" << axes.x(v) << "\" y1=\"" << bottom << "\" x2=\"" << axes.x(v) << "\" y2=\"" << bottom + 5
        << "\" stroke=\"#444\"/><text x=\"" << axes.x(v) << "\" y=\"" << bottom + 18 << "\" text-anchor=\"middle\">"
        << bytes_label(v) << "</text>\n";
  }
  const double step = tick_step(axes.y_high);
  for (int tick = 0; tick * step <= axes.y_high + step * 1e-6; ++tick) {
    const double v = tick * step;
    out << "<line x1=\"" << kLeft << "\" y1=\"" << axes.y(v) << "\" x2=\"" << kLeft + kPlotWidth << "\" y2=\""
        << axes.y(v) << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 6 << "\" y=\"" << axes.y(v) + 4
        << "\" text-anchor=\"end\">" << printf_text("%g", v) << "</text>\n";
  }
  out << "<text x=\"" << kLeft + kPlotWidth / 2 << "\" y=\"" << bottom + 40
      << "\" text-anchor=\"middle\">size (B, log2 scale)</text>\n"
      << "<text x=\"16\" y=\"" << kTop + kPlotHeight / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 16 "
      << kTop + kPlotHeight / 2 << ")\">busbw (GB/s)</text>\n";
}

// One series: a backend's busbw for one dtype, op and root, out of place or in place.
struct Series {
  std::string label;
  std::size_t backend = 0;
  bool in_place = false;
  std::vector<std::pair<double, double>> points;  // (log2 bytes, busbw)
};

std::vector<Series> collect_series(const Report& report) {
  std::vector<Series> series;
  const bool combinations =
      report.settings.dtypes.size() * report.settings.ops.size() * report.settings.roots.size() > 1;
  for (const Row& row : report.rows) {
    const Case& c = row.out_of_place;
    for (bool in_place : {false, true}) {
      std::string label = report.backends[row.backend] + (in_place ? " in-place" : " out-of-place");
      if (combinations)
        label += " " + std::string(nccl_tests_name(c.dtype)) + " " + op_text(c) + " root " + root_text(c);
      auto found = std::find_if(series.begin(), series.end(), [&](const Series& s) { return s.label == label; });
      if (found == series.end()) found = series.insert(series.end(), Series{label, row.backend, in_place, {}});
      const Measurement& m = in_place ? row.in_place_result : row.out_of_place_result;
      const std::size_t bytes = algorithm_bytes(c);
      if (m.state == Measurement::State::Ok && bytes > 0) {
        found->points.emplace_back(std::log2(static_cast<double>(bytes)), m.bandwidth.busbw);
      }
    }
  }
  return series;
}

}  // namespace

void write_svg(std::ostream& out, const Report& report) {
  const Axes axes = fit_axes(report);
  const double width = kLeft + kPlotWidth + kRight, height = kTop + kPlotHeight + kBottom;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  std::string title = "collcheck bench: " + std::string(name(report.settings.collective)) + ", " +
                      std::to_string(report.settings.nranks) + " ranks";
  out << "<title>" << xml_text(title) << "</title>\n<text x=\"" << kLeft << "\" y=\"24\" font-size=\"14\">"
      << xml_text(title) << "</text>\n";
  write_axes(out, axes);
  double legend_y = kTop + 10;
  auto legend = [&](const std::string& color, const char* dash, const std::string& label) {
    out << "<line x1=\"" << kLeft + kPlotWidth + 10 << "\" y1=\"" << legend_y << "\" x2=\"" << kLeft + kPlotWidth + 34
        << "\" y2=\"" << legend_y << "\" stroke=\"" << color << "\" stroke-width=\"2\"" << dash << "/><text x=\""
        << kLeft + kPlotWidth + 40 << "\" y=\"" << legend_y + 4 << "\">" << xml_text(label) << "</text>\n";
    legend_y += 18;
  };
  for (const Series& s : collect_series(report)) {
    const std::string color = kColors[s.backend % std::size(kColors)];
    const char* dash = s.in_place ? " stroke-dasharray=\"6 4\"" : "";
    out << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\"" << dash << " points=\"";
    for (std::size_t i = 0; i < s.points.size(); ++i) {
      out << (i > 0 ? " " : "") << printf_text("%.1f", axes.x(s.points[i].first)) << ","
          << printf_text("%.1f", axes.y(s.points[i].second));
    }
    out << "\"><title>" << xml_text(s.label) << "</title></polyline>\n";
    legend(color, dash, s.label);
  }
  if (report.memory.bytes > 0) {
    const double y = axes.y(report.memory.bandwidth);
    out << "<line x1=\"" << kLeft << "\" y1=\"" << y << "\" x2=\"" << kLeft + kPlotWidth << "\" y2=\"" << y
        << "\" stroke=\"#777\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"><title>memory copy "
           "bandwidth</title></line>\n";
    legend("#777", " stroke-dasharray=\"2 3\"", "memcpy " + printf_text("%.2f", report.memory.bandwidth) + " GB/s");
  }
  out << "</svg>\n";
}

}  // namespace collcheck::bench
