// compiler/memory/plan_report.cc — running strategies and writing the three
// report views (see the header).
#include "compiler/memory/plan_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <utility>

namespace keel::memory {
namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// Ratio text, or `none` when the bound is 0 (no bytes to compare with).
std::string RatioText(uint64_t bytes, uint64_t bound, const char* none) {
  if (bound == 0) return none;
  return Fixed(static_cast<double>(bytes) / static_cast<double>(bound), 3);
}

const char* DeviceName(Device d) { return d == Device::kCuda ? "cuda" : "cpu"; }

PlanForm FormOf(const Plan& plan) {
  for (const Storage& s : plan.storages) {
    if (s.arena < 0) return PlanForm::kDynamic;
  }
  for (const Placement& p : plan.placements) {
    if (p.offset != 0) return PlanForm::kOffsets;
  }
  return PlanForm::kObjects;
}

// Where each tensor of a valid plan is drawn: arenas stacked in index order, then
// the dynamic storages in index order. Also gives each tensor's address.
struct Layout {
  std::vector<uint64_t> arena_base;
  std::vector<uint64_t> dynamic_base;  // per storage (arena < 0 only)
  uint64_t height = 0;                  // == plan.TotalBytes()
};

Layout LayoutOf(const Plan& plan) {
  Layout layout;
  uint64_t base = 0;
  for (const Arena& a : plan.arenas) {
    layout.arena_base.push_back(base);
    base += a.size;
  }
  layout.dynamic_base.assign(plan.storages.size(), 0);
  for (size_t s = 0; s < plan.storages.size(); ++s) {
    if (plan.storages[s].arena < 0) {
      layout.dynamic_base[s] = base;
      base += plan.storages[s].size;
    }
  }
  layout.height = base;
  return layout;
}

// Address of tensor t within its arena (or dynamic storage), and its arena index.
uint64_t AddressOf(const Plan& plan, size_t t, int32_t* arena) {
  const Placement& p = plan.placements[t];
  const Storage& s = plan.storages[static_cast<size_t>(p.storage)];
  *arena = s.arena;
  return s.arena >= 0 ? s.offset + p.offset : p.offset;
}

uint64_t DrawStart(const Plan& plan, const Layout& layout, size_t t) {
  const Placement& p = plan.placements[t];
  const Storage& s = plan.storages[static_cast<size_t>(p.storage)];
  if (s.arena >= 0) return layout.arena_base[static_cast<size_t>(s.arena)] + s.offset + p.offset;
  return layout.dynamic_base[static_cast<size_t>(p.storage)] + p.offset;
}

std::string OneLine(const std::string& text) {
  std::string out = text;
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

}  // namespace

const char* PlanFormName(PlanForm form) {
  switch (form) {
    case PlanForm::kOffsets: return "offsets";
    case PlanForm::kObjects: return "objects";
    case PlanForm::kDynamic: return "dynamic";
  }
  return "?";
}

bool PlanReport::AllOk() const {
  return std::all_of(results.begin(), results.end(), [](const StrategyResult& r) { return r.ok(); });
}

Result<std::vector<std::string>> ParseStrategies(const std::string& text) {
  if (text == "all") return PlannerNames();
  std::vector<std::string> names;
  std::stringstream in(text);
  std::string name;
  const std::vector<std::string> known = PlannerNames();
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& n : known) list += (list.empty() ? "" : ", ") + n;
      return NotFound("unknown strategy '" + name + "' (known: all, " + list + ")");
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) return InvalidArgument("no strategy given in '" + text + "'");
  return names;
}

Result<StrategyResult> RunStrategy(const std::string& name, const std::vector<TensorLifetime>& tensors,
                                   const PlanOptions& options) {
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<Planner> planner, CreatePlanner(name));
  StrategyResult result;
  result.name = name;
  const auto start = std::chrono::steady_clock::now();
  Result<Plan> plan = planner->MakePlan(tensors, options);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!plan.ok()) {
    result.status = plan.status().WithContext("strategy '" + name + "' failed");
    return result;
  }
  result.plan = std::move(plan).value();
  // The checker trusts nothing in the plan, so a buggy planner is caught here
  // rather than drawn as if it were valid.
  Status check = CheckPlan(tensors, result.plan);
  if (!check.ok()) {
    result.status = check.WithContext("plan of strategy '" + name + "' failed CheckPlan");
    return result;
  }
  result.total_bytes = result.plan.TotalBytes();
  result.allocations = result.plan.arenas.size();
  for (const Storage& s : result.plan.storages) result.allocations += s.arena < 0 ? 1 : 0;
  result.form = FormOf(result.plan);
  return result;
}

PlanReport MakeReport(std::string model, std::string target, std::vector<TensorLifetime> tensors,
                      int32_t num_steps, std::vector<StrategyResult> results) {
  PlanReport report;
  report.model = std::move(model);
  report.target = std::move(target);
  report.peak_live_bound = PeakLiveLowerBound(tensors);
  report.positional_max_bound = PositionalMaxLowerBound(tensors);
  int32_t steps = std::max<int32_t>(num_steps, 0);
  for (const TensorLifetime& t : tensors) steps = std::max(steps, t.last_use + 1);
  report.num_steps = steps;
  report.tensors = std::move(tensors);
  report.results = std::move(results);
  return report;
}

// ---- table -------------------------------------------------------------------

std::string FormatTable(const PlanReport& r, const ReportFormat& format) {
  std::ostringstream out;
  out << "model " << r.model << "  target " << r.target << "  tensors " << r.tensors.size() << "  steps "
      << r.num_steps << "\n";
  if (!r.note.empty()) out << "note: " << r.note << "\n";
  out << "lower bounds: peak-live " << r.peak_live_bound << " B (" << HumanBytes(r.peak_live_bound)
      << "), positional-max " << r.positional_max_bound << " B (" << HumanBytes(r.positional_max_bound)
      << ")\n";
  // The strategy column fits the longest label ("best (best(greedy-size)) *").
  auto label = [](const StrategyResult& s) {
    std::string name = s.name;
    if (s.ok() && s.plan.strategy != s.name) name += " (" + s.plan.strategy + ")";
    if (s.ok() && s.plan.optimal) name += " *";
    return name;
  };
  int width = 22;
  for (const StrategyResult& s : r.results) width = std::max(width, static_cast<int>(label(s).size()));
  char line[512];
  std::snprintf(line, sizeof(line), "%-*s %-8s %14s %11s %8s %8s %7s", width, "strategy", "form", "bytes", "",
                "/peak", "/posmax", "allocs");
  out << line << (format.timings ? "   time(ms)" : "") << "\n";
  for (const StrategyResult& s : r.results) {
    if (!s.ok()) {
      const bool check_failed = s.status.message().find("failed CheckPlan") != std::string::npos;
      std::snprintf(line, sizeof(line), "%-*s ", width, s.name.c_str());
      out << line << (check_failed ? "CHECK FAILED: " : "FAILED: ") << OneLine(s.status.ToString()) << "\n";
      continue;
    }
    std::snprintf(line, sizeof(line), "%-*s %-8s %14llu %11s %8s %8s %7zu", width, label(s).c_str(),
                  PlanFormName(s.form),
                  static_cast<unsigned long long>(s.total_bytes), HumanBytes(s.total_bytes).c_str(),
                  RatioText(s.total_bytes, r.peak_live_bound, "-").c_str(),
                  s.form == PlanForm::kObjects ? RatioText(s.total_bytes, r.positional_max_bound, "-").c_str() : "-",
                  s.allocations);
    out << line;
    if (format.timings) {
      std::snprintf(line, sizeof(line), " %10.3f", s.seconds * 1e3);
      out << line;
    }
    out << "\n";
  }
  bool any_optimal = false;
  for (const StrategyResult& s : r.results) any_optimal |= s.ok() && s.plan.optimal;
  if (any_optimal) out << "* proven optimal for its form\n";
  return out.str();
}

std::string HumanBytes(uint64_t bytes) {
  char buf[32];
  if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.2f MiB", bytes / 1048576.0);
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

// ---- JSON --------------------------------------------------------------------

std::string JsonEscape(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

namespace {

std::string JStr(const std::string& s) { return "\"" + JsonEscape(s) + "\""; }

std::string JRatio(uint64_t bytes, uint64_t bound) {
  return bound == 0 ? "null" : Fixed(static_cast<double>(bytes) / static_cast<double>(bound), 6);
}

void JsonStrategy(const PlanReport& r, const StrategyResult& s, const ReportFormat& format, std::ostream& out) {
  out << "    {\"name\": " << JStr(s.name) << ", \"ok\": " << (s.ok() ? "true" : "false");
  if (!s.ok()) {
    out << ", \"error\": " << JStr(s.status.ToString());
    if (format.timings) out << ", \"seconds\": " << Fixed(s.seconds, 6);
    out << "}";
    return;
  }
  const Plan& p = s.plan;
  out << ", \"plan_strategy\": " << JStr(p.strategy) << ", \"form\": " << JStr(PlanFormName(s.form))
      << ",\n     \"total_bytes\": " << s.total_bytes << ", \"ratio_peak_live\": " << JRatio(s.total_bytes, r.peak_live_bound)
      << ", \"ratio_positional_max\": "
      << (s.form == PlanForm::kObjects ? JRatio(s.total_bytes, r.positional_max_bound) : std::string("null"))
      << ", \"allocations\": " << s.allocations << ", \"optimal\": " << (p.optimal ? "true" : "false")
      << ", \"plan_lower_bound\": " << p.lower_bound;
  if (format.timings) out << ", \"seconds\": " << Fixed(s.seconds, 6);
  out << ",\n     \"arenas\": [";
  for (size_t a = 0; a < p.arenas.size(); ++a) {
    out << (a ? ", " : "") << "{\"device\": " << JStr(DeviceName(p.arenas[a].device)) << ", \"size\": " << p.arenas[a].size
        << ", \"alignment\": " << p.arenas[a].alignment << "}";
  }
  out << "],\n     \"storages\": [";
  for (size_t i = 0; i < p.storages.size(); ++i) {
    const Storage& st = p.storages[i];
    out << (i ? ", " : "") << "{\"device\": " << JStr(DeviceName(st.device)) << ", \"size\": " << st.size
        << ", \"alignment\": " << st.alignment << ", \"arena\": " << st.arena << ", \"offset\": " << st.offset << "}";
  }
  out << "],\n     \"tensors\": [";
  for (size_t t = 0; t < r.tensors.size(); ++t) {
    const TensorLifetime& l = r.tensors[t];
    int32_t arena = -1;
    const uint64_t address = AddressOf(p, t, &arena);
    out << (t ? ",\n       " : "\n       ") << "{\"name\": " << JStr(l.name) << ", \"size\": " << l.size
        << ", \"alignment\": " << l.alignment << ", \"first_use\": " << l.first_use << ", \"last_use\": " << l.last_use
        << ", \"may_alias_with\": " << l.may_alias_with << ", \"device\": " << JStr(DeviceName(l.device)) << ", \"storage\": " << p.placements[t].storage
        << ", \"offset\": " << p.placements[t].offset << ", \"arena\": " << arena << ", \"address\": " << address << "}";
  }
  out << "]}";
}

}  // namespace

std::string ToJson(const PlanReport& r, const ReportFormat& format) {
  std::ostringstream out;
  out << "{\n  \"model\": " << JStr(r.model) << ",\n  \"target\": " << JStr(r.target)
      << ",\n  \"num_tensors\": " << r.tensors.size() << ",\n  \"num_steps\": " << r.num_steps;
  if (!r.note.empty()) out << ",\n  \"note\": " << JStr(r.note);
  out << ",\n  \"bounds\": {\"peak_live\": " << r.peak_live_bound << ", \"positional_max\": " << r.positional_max_bound
      << "},\n  \"all_ok\": " << (r.AllOk() ? "true" : "false") << ",\n  \"strategies\": [\n";
  for (size_t i = 0; i < r.results.size(); ++i) {
    JsonStrategy(r, r.results[i], format, out);
    out << (i + 1 < r.results.size() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
  return out.str();
}

// ---- HTML --------------------------------------------------------------------

std::string HtmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// SVG user units: x in steps, y in KiB (negative up, so address 0 is at the
// bottom of the viewBox "0 -H W H"). KiB keeps coordinates small for renderers
// that use single-precision floats.
std::string Y(uint64_t bytes) { return Fixed(static_cast<double>(bytes) / 1024.0, 3); }
std::string NegY(uint64_t bytes) { return bytes == 0 ? "0.000" : "-" + Y(bytes); }

const char kStyle[] = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #ddd}
td:first-child,th:first-child{text-align:left}.fail{color:#b00;font-weight:bold}
.plan{margin:1em 0 2em}.plan h2{font-size:15px;margin:.2em 0}.chart{display:flex;align-items:stretch}
.yax{display:flex;flex-direction:column;justify-content:space-between;width:7em;text-align:right;padding-right:6px;font-size:12px;color:#555}
svg.mem{flex:1;height:320px;border:1px solid #999;background:#fafafa}
rect.t{stroke:#333;stroke-width:.5px;vector-effect:non-scaling-stroke;fill-opacity:.8}rect.t:hover{fill:#e33}
line.lb{stroke:#c00;stroke-width:2px;vector-effect:non-scaling-stroke}
line.pm{stroke:#06c;stroke-width:2px;stroke-dasharray:6 4;vector-effect:non-scaling-stroke}
line.sep{stroke:#888;stroke-width:1px;stroke-dasharray:2 3;vector-effect:non-scaling-stroke}
polyline.live{fill:none;stroke:#000;stroke-width:1px;stroke-opacity:.5;vector-effect:non-scaling-stroke}
.xax{display:flex;justify-content:space-between;margin-left:7.4em;font-size:12px;color:#555}
.legend span{margin-right:1.5em}.note{color:#850})";

const char kScript[] = R"((function(){
var sel=document.getElementById('sel'),common=document.getElementById('common');
var plans=[].slice.call(document.querySelectorAll('div.plan'));
var maxB=+document.body.getAttribute('data-max');
function fmt(b){if(b>=1048576)return (b/1048576).toFixed(2)+' MiB';if(b>=1024)return (b/1024).toFixed(1)+' KiB';return b+' B';}
function update(){plans.forEach(function(p){
 p.style.display=(sel.value==='all'||sel.value===p.getAttribute('data-index'))?'':'none';
 var svg=p.querySelector('svg.mem');if(!svg)return;
 var h=common.checked?maxB:+p.getAttribute('data-height');if(!(h>0))h=1;
 svg.setAttribute('viewBox','0 '+(-h/1024)+' '+svg.getAttribute('data-w')+' '+(h/1024));
 p.querySelector('.ytop').textContent=fmt(h);});}
sel.onchange=update;common.onchange=update;update();})();)";

// Bytes live at each step (the step function the peak-live bound maximizes).
std::vector<uint64_t> LiveBytes(const PlanReport& r) {
  std::vector<uint64_t> live(static_cast<size_t>(r.num_steps) + 1, 0);
  for (const TensorLifetime& t : r.tensors) {
    if (t.first_use < 0 || t.last_use < t.first_use || t.last_use >= r.num_steps) continue;
    live[static_cast<size_t>(t.first_use)] += t.size;
    live[static_cast<size_t>(t.last_use) + 1] -= t.size;
  }
  uint64_t acc = 0;
  for (uint64_t& v : live) {
    acc += v;
    v = acc;
  }
  live.pop_back();
  return live;
}

void HtmlPlan(const PlanReport& r, size_t index, const std::vector<uint64_t>& live, const ReportFormat& format,
              std::ostream& out) {
  const StrategyResult& s = r.results[index];
  if (!s.ok()) {
    out << "<div class=\"plan\" data-index=\"" << index << "\"><h2>" << HtmlEscape(s.name)
        << " — <span class=\"fail\">FAILED: " << HtmlEscape(s.status.ToString()) << "</span></h2></div>\n";
    return;
  }
  const Plan& p = s.plan;
  const Layout layout = LayoutOf(p);
  const uint64_t own = std::max<uint64_t>(layout.height, 1);
  // Each plan starts on its own scale (naive and dynamic would flatten the others
  // on a common one); the page's checkbox switches every plan to the common scale
  // (body's data-max).
  const uint64_t shown = own;
  const int32_t w = std::max<int32_t>(r.num_steps, 1);
  out << "<div class=\"plan\" data-index=\"" << index << "\" data-height=\"" << own << "\"><h2>" << HtmlEscape(s.name);
  if (p.strategy != s.name) out << " (" << HtmlEscape(p.strategy) << ")";
  out << " — " << s.total_bytes << " B (" << HumanBytes(s.total_bytes) << "), " << PlanFormName(s.form)
      << ", ratio to peak-live " << RatioText(s.total_bytes, r.peak_live_bound, "-");
  if (s.form == PlanForm::kObjects) out << ", to positional-max " << RatioText(s.total_bytes, r.positional_max_bound, "-");
  out << ", " << s.allocations << " allocation(s)" << (p.optimal ? ", proven optimal" : "");
  if (format.timings) out << ", " << Fixed(s.seconds * 1e3, 3) << " ms";
  out << "</h2>\n<div class=\"chart\"><div class=\"yax\"><span class=\"ytop\">" << HumanBytes(shown)
      << "</span><span>0</span></div>\n<svg class=\"mem\" xmlns=\"http://www.w3.org/2000/svg\" data-w=\"" << w
      << "\" viewBox=\"0 " << NegY(shown) << " " << w << " " << Y(shown) << "\" preserveAspectRatio=\"none\">\n";
  // Arena boundaries, when few enough to be readable.
  if (p.arenas.size() + layout.dynamic_base.size() <= 32) {
    for (size_t a = 1; a < p.arenas.size(); ++a) {
      out << "<line class=\"sep\" x1=\"0\" x2=\"" << w << "\" y1=\"" << NegY(layout.arena_base[a]) << "\" y2=\""
          << NegY(layout.arena_base[a]) << "\"/>\n";
    }
  }
  for (size_t t = 0; t < r.tensors.size(); ++t) {
    const TensorLifetime& l = r.tensors[t];
    int32_t arena = -1;
    const uint64_t address = AddressOf(p, t, &arena);
    const uint64_t y0 = DrawStart(p, layout, t);
    out << "<rect class=\"t\" x=\"" << l.first_use << "\" y=\"" << NegY(y0 + l.size) << "\" width=\""
        << (l.last_use - l.first_use + 1) << "\" height=\"" << Y(l.size) << "\" fill=\"hsl(" << (t * 137) % 360
        << ",65%,60%)\"><title>" << HtmlEscape(l.name) << "\n" << l.size << " B, steps " << l.first_use << "–"
        << l.last_use;
    if (static_cast<size_t>(l.first_use) < r.step_names.size()) {
      out << " (written by " << HtmlEscape(r.step_names[static_cast<size_t>(l.first_use)]) << ")";
    }
    out << "\n" << DeviceName(l.device) << " storage " << p.placements[t].storage << " + " << p.placements[t].offset;
    if (arena >= 0) out << ", arena " << arena << " address " << address;
    out << "</title></rect>\n";
  }
  out << "<polyline class=\"live\" points=\"";
  for (size_t step = 0; step < live.size(); ++step) {
    out << (step ? " " : "") << step << "," << NegY(live[step]) << " " << step + 1 << "," << NegY(live[step]);
  }
  out << "\"><title>live bytes per step</title></polyline>\n";
  out << "<line class=\"lb\" x1=\"0\" x2=\"" << w << "\" y1=\"" << NegY(r.peak_live_bound) << "\" y2=\""
      << NegY(r.peak_live_bound) << "\"><title>peak-live lower bound " << r.peak_live_bound << " B</title></line>\n";
  if (s.form == PlanForm::kObjects) {
    out << "<line class=\"pm\" x1=\"0\" x2=\"" << w << "\" y1=\"" << NegY(r.positional_max_bound) << "\" y2=\""
        << NegY(r.positional_max_bound) << "\"><title>positional-max lower bound " << r.positional_max_bound
        << " B</title></line>\n";
  }
  out << "</svg></div>\n<div class=\"xax\"><span>step 0</span><span>step " << w << "</span></div></div>\n";
}

}  // namespace

std::string ToHtml(const PlanReport& r, const ReportFormat& format) {
  uint64_t common = std::max(r.peak_live_bound, r.positional_max_bound);
  for (const StrategyResult& s : r.results) {
    if (s.ok()) common = std::max(common, s.total_bytes);
  }
  const std::vector<uint64_t> live = LiveBytes(r);
  std::ostringstream out;
  const std::string title = "keel-plan: " + r.model + " (" + r.target + ")";
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << HtmlEscape(title)
      << "</title>\n<style>\n" << kStyle << "\n</style></head>\n<body data-max=\"" << std::max<uint64_t>(common, 1)
      << "\">\n<h1>" << HtmlEscape(title) << "</h1>\n<p>" << r.tensors.size() << " tensors, " << r.num_steps
      << " steps. Lower bounds: peak live " << r.peak_live_bound << " B (" << HumanBytes(r.peak_live_bound)
      << "), positional max " << r.positional_max_bound << " B (" << HumanBytes(r.positional_max_bound) << ").</p>\n";
  if (!r.note.empty()) out << "<p class=\"note\">" << HtmlEscape(r.note) << "</p>\n";
  if (!r.AllOk()) out << "<p class=\"fail\">Some strategies FAILED (see below); their plans are not shown.</p>\n";
  out << "<table><tr><th>strategy</th><th>form</th><th>bytes</th><th></th><th>/peak</th><th>/posmax</th>"
         "<th>allocations</th>"
      << (format.timings ? "<th>time (ms)</th>" : "") << "</tr>\n";
  for (const StrategyResult& s : r.results) {
    out << "<tr><td>" << HtmlEscape(s.name) << "</td>";
    if (!s.ok()) {
      out << "<td colspan=\"" << (format.timings ? 7 : 6) << "\" class=\"fail\">FAILED: " << HtmlEscape(s.status.ToString())
          << "</td></tr>\n";
      continue;
    }
    out << "<td>" << PlanFormName(s.form) << "</td><td>" << s.total_bytes << "</td><td>" << HumanBytes(s.total_bytes)
        << "</td><td>" << RatioText(s.total_bytes, r.peak_live_bound, "-") << "</td><td>"
        << (s.form == PlanForm::kObjects ? RatioText(s.total_bytes, r.positional_max_bound, "-") : "-") << "</td><td>"
        << s.allocations << "</td>";
    if (format.timings) out << "<td>" << Fixed(s.seconds * 1e3, 3) << "</td>";
    out << "</tr>\n";
  }
  out << "</table>\n<div class=\"legend\">Plan: <select id=\"sel\"><option value=\"all\">all (stacked)</option>";
  for (size_t i = 0; i < r.results.size(); ++i) {
    out << "<option value=\"" << i << "\">" << HtmlEscape(r.results[i].name) << "</option>";
  }
  out << "</select> <label><input type=\"checkbox\" id=\"common\"> same scale for every plan</label>"
         " <span>x: step, y: address (arenas stacked)</span><span style=\"color:#c00\">── peak-live bound</span>"
         "<span style=\"color:#06c\">- - positional-max bound (objects form)</span>"
         "<span style=\"color:#777\">── live bytes</span></div>\n";
  for (size_t i = 0; i < r.results.size(); ++i) HtmlPlan(r, i, live, format, out);
  out << "<script>\n" << kScript << "\n</script>\n</body></html>\n";
  return out.str();
}

}  // namespace keel::memory
