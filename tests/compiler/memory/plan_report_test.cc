// tests/compiler/memory/plan_report_test.cc — the plan report (compiler/memory/
// plan_report.h) on hand-made lifetimes: strategy parsing, running and checking,
// the JSON document (parsed back by a tiny independent parser and re-checked for
// overlaps from its own numbers), the HTML page (one rect per tensor per plan,
// escaped names, nothing external), the table, failures and determinism.
#include "compiler/memory/plan_report.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/memory/planner.h"

namespace keel::memory {
namespace {

// ---- a tiny JSON parser (strict enough to reject malformed output) -----------

struct JValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool b = false;
  double number = 0;
  std::string text;  // string value, or the number's literal text
  std::vector<JValue> items;
  std::map<std::string, JValue> fields;
  const JValue& operator[](const std::string& key) const {
    static const JValue kMissing;
    auto it = fields.find(key);
    return it == fields.end() ? kMissing : it->second;
  }
  uint64_t U64() const { return std::strtoull(text.c_str(), nullptr, 10); }
  int64_t I64() const { return std::strtoll(text.c_str(), nullptr, 10); }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  bool Parse(JValue& out) {
    if (!Value(out)) return false;
    Ws();
    return pos_ == s_.size();
  }

 private:
  void Ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Lit(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool String(std::string& out) {
    if (pos_ >= s_.size() || s_[pos_] != '"') return false;
    ++pos_;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) return false;  // raw control characters are invalid
      if (c == '\\') {
        if (pos_ >= s_.size()) return false;
        const char e = s_[pos_++];
        if (e == 'n') c = '\n';
        else if (e == 't') c = '\t';
        else if (e == 'r') c = '\r';
        else if (e == '"' || e == '\\' || e == '/') c = e;
        else if (e == 'u') {
          if (pos_ + 4 > s_.size()) return false;
          c = static_cast<char>(std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16));
          pos_ += 4;
        } else {
          return false;
        }
      }
      out += c;
    }
    if (pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  bool Value(JValue& v) {
    Ws();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') {
      v.kind = JValue::kObject;
      ++pos_;
      Ws();
      if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
      while (true) {
        Ws();
        std::string key;
        if (!String(key)) return false;
        Ws();
        if (pos_ >= s_.size() || s_[pos_++] != ':') return false;
        if (v.fields.count(key)) return false;  // duplicate keys are a bug in the writer
        if (!Value(v.fields[key])) return false;
        Ws();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == ',') { ++pos_; continue; }
        if (s_[pos_] == '}') return ++pos_, true;
        return false;
      }
    }
    if (c == '[') {
      v.kind = JValue::kArray;
      ++pos_;
      Ws();
      if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
      while (true) {
        v.items.emplace_back();
        if (!Value(v.items.back())) return false;
        Ws();
        if (pos_ >= s_.size()) return false;
        if (s_[pos_] == ',') { ++pos_; continue; }
        if (s_[pos_] == ']') return ++pos_, true;
        return false;
      }
    }
    if (c == '"') {
      v.kind = JValue::kString;
      return String(v.text);
    }
    if (Lit("true")) { v.kind = JValue::kBool; v.b = true; return true; }
    if (Lit("false")) { v.kind = JValue::kBool; return true; }
    if (Lit("null")) { v.kind = JValue::kNull; return true; }
    const size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start) return false;
    v.kind = JValue::kNumber;
    v.text = s_.substr(start, pos_ - start);
    char* end = nullptr;
    v.number = std::strtod(v.text.c_str(), &end);
    return end == v.text.c_str() + v.text.size();
  }
  const std::string& s_;
  size_t pos_ = 0;
};

// ---- fixtures -------------------------------------------------------------------

TensorLifetime T(const std::string& name, uint64_t size, int32_t first, int32_t last) {
  TensorLifetime t;
  t.name = name;
  t.size = size;
  t.first_use = first;
  t.last_use = last;
  t.alignment = 64;
  return t;
}

// A small CNN-like chain with a skip connection (conv1 is read again at step 4).
std::vector<TensorLifetime> HandMade() {
  return {
      T("input_copy", 4096, 0, 1),      // 0
      T("conv1", 2048, 1, 4),           // 1: skip connection, read again at step 4
      T("relu1", 1024, 2, 3),           // 2
      T("conv2 \"<b>&x\"", 3072, 3, 4), // 3: a name that needs escaping everywhere
      T("add", 512, 4, 5),              // 4
      T("out", 256, 5, 6),              // 5
  };
}
// Live bytes per step by hand: s0 4096, s1 4096+2048 = 6144, s2 3072,
// s3 2048+1024+3072 = 6144, s4 2048+3072+512 = 5632, s5 768, s6 256. Peak 6144.
constexpr uint64_t kHandPeak = 6144;

std::vector<StrategyResult> RunAll(const std::vector<TensorLifetime>& tensors, const std::vector<std::string>& names) {
  std::vector<StrategyResult> results;
  PlanOptions options;
  options.time_limit_seconds = 5;
  for (const std::string& n : names) {
    auto r = RunStrategy(n, tensors, options);
    EXPECT_TRUE(r.ok()) << n << ": " << r.status().ToString();
    if (r.ok()) results.push_back(std::move(r).value());
  }
  return results;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos; pos = haystack.find(needle, pos + 1)) ++n;
  return n;
}

// ---- tests ----------------------------------------------------------------------

TEST(ParseStrategies, AllAndLists) {
  auto all = ParseStrategies("all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, PlannerNames());
  auto some = ParseStrategies("greedy-size,naive,greedy-size");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*some, (std::vector<std::string>{"greedy-size", "naive"}));
}

TEST(ParseStrategies, UnknownAndEmptyAreErrors) {
  auto bad = ParseStrategies("naive,gredy-size");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("gredy-size"), std::string::npos);
  auto empty = ParseStrategies(",");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(RunStrategy("nope", HandMade(), PlanOptions{}).ok());
}

TEST(RunStrategy, EveryStrategyGivesACheckedPlanAtLeastTheBound) {
  const auto tensors = HandMade();
  EXPECT_EQ(PeakLiveLowerBound(tensors), kHandPeak);
  const auto results = RunAll(tensors, PlannerNames());
  ASSERT_EQ(results.size(), PlannerNames().size());
  for (const StrategyResult& r : results) {
    ASSERT_TRUE(r.ok()) << r.name << ": " << r.status.ToString();
    EXPECT_TRUE(CheckPlan(tensors, r.plan).ok()) << r.name;
    EXPECT_EQ(r.total_bytes, r.plan.TotalBytes()) << r.name;
    EXPECT_GE(r.total_bytes, kHandPeak) << r.name;
    EXPECT_GE(r.seconds, 0.0);
    size_t allocations = r.plan.arenas.size();
    for (const Storage& s : r.plan.storages) allocations += s.arena < 0;
    EXPECT_EQ(r.allocations, allocations) << r.name;
  }
  // Forms by construction of the strategies (planner.h's table).
  auto form_of = [&](const std::string& n) {
    for (const StrategyResult& r : results) {
      if (r.name == n) return r.form;
    }
    return PlanForm::kOffsets;
  };
  EXPECT_EQ(form_of("naive"), PlanForm::kObjects);
  EXPECT_EQ(form_of("tvm"), PlanForm::kObjects);
  EXPECT_EQ(form_of("dynamic"), PlanForm::kDynamic);
  EXPECT_EQ(form_of("greedy-size"), PlanForm::kOffsets);
  // naive: one allocation per tensor, Σ sizes (each already 64-aligned).
  for (const StrategyResult& r : results) {
    if (r.name == "naive") {
      EXPECT_EQ(r.allocations, tensors.size());
      EXPECT_EQ(r.total_bytes, 4096u + 2048 + 1024 + 3072 + 512 + 256);
    }
  }
}

TEST(Json, ParsesBackAndMatchesThePlans) {
  const auto tensors = HandMade();
  PlanReport report = MakeReport("hand.onnx", "cpu", tensors, 0, RunAll(tensors, PlannerNames()));
  const std::string json = ToJson(report, ReportFormat{});
  JValue root;
  ASSERT_TRUE(JsonParser(json).Parse(root)) << json;
  EXPECT_EQ(root["model"].text, "hand.onnx");
  EXPECT_EQ(root["target"].text, "cpu");
  EXPECT_EQ(root["num_tensors"].U64(), tensors.size());
  EXPECT_EQ(root["num_steps"].I64(), 7);  // max last_use + 1
  EXPECT_EQ(root["bounds"]["peak_live"].U64(), kHandPeak);
  EXPECT_EQ(root["bounds"]["positional_max"].U64(), PositionalMaxLowerBound(tensors));
  EXPECT_TRUE(root["all_ok"].b);
  const JValue& strategies = root["strategies"];
  ASSERT_EQ(strategies.kind, JValue::kArray);
  ASSERT_EQ(strategies.items.size(), report.results.size());
  for (size_t i = 0; i < strategies.items.size(); ++i) {
    const JValue& s = strategies.items[i];
    const StrategyResult& r = report.results[i];
    SCOPED_TRACE(r.name);
    EXPECT_EQ(s["name"].text, r.name);
    EXPECT_TRUE(s["ok"].b);
    EXPECT_EQ(s["total_bytes"].U64(), r.plan.TotalBytes());
    EXPECT_EQ(s["seconds"].kind, JValue::kNumber);
    EXPECT_NEAR(s["ratio_peak_live"].number, double(r.plan.TotalBytes()) / kHandPeak, 1e-5);
    EXPECT_EQ(s["ratio_positional_max"].kind, r.form == PlanForm::kObjects ? JValue::kNumber : JValue::kNull);
    const JValue& ts = s["tensors"];
    ASSERT_EQ(ts.items.size(), tensors.size());
    const JValue& storages = s["storages"];
    ASSERT_EQ(storages.items.size(), r.plan.storages.size());
    for (size_t t = 0; t < tensors.size(); ++t) {
      const JValue& jt = ts.items[t];
      EXPECT_EQ(jt["name"].text, tensors[t].name);  // escaping round-trips
      EXPECT_EQ(jt["size"].U64(), tensors[t].size);
      EXPECT_EQ(jt["first_use"].I64(), tensors[t].first_use);
      EXPECT_EQ(jt["last_use"].I64(), tensors[t].last_use);
      EXPECT_EQ(jt["storage"].I64(), r.plan.placements[t].storage);
      EXPECT_EQ(jt["offset"].U64(), r.plan.placements[t].offset);
      const JValue& st = storages.items[static_cast<size_t>(jt["storage"].I64())];
      EXPECT_EQ(jt["arena"].I64(), st["arena"].I64());
      const uint64_t expect_address = st["arena"].I64() >= 0 ? st["offset"].U64() + jt["offset"].U64() : jt["offset"].U64();
      EXPECT_EQ(jt["address"].U64(), expect_address);
    }
    // Independent overlap check on the JSON's own numbers: tensors live at the
    // same step in the same arena never share an address range.
    for (size_t a = 0; a < tensors.size(); ++a) {
      for (size_t b = a + 1; b < tensors.size(); ++b) {
        const JValue& x = ts.items[a];
        const JValue& y = ts.items[b];
        const bool co_live = std::max(x["first_use"].I64(), y["first_use"].I64()) <=
                             std::min(x["last_use"].I64(), y["last_use"].I64());
        const bool same_space = x["arena"].I64() >= 0 ? x["arena"].I64() == y["arena"].I64()
                                                      : x["storage"].I64() == y["storage"].I64();
        const bool overlap = x["address"].U64() < y["address"].U64() + y["size"].U64() &&
                             y["address"].U64() < x["address"].U64() + x["size"].U64();
        EXPECT_FALSE(co_live && same_space && overlap) << x["name"].text << " vs " << y["name"].text;
      }
    }
  }
}

TEST(Json, NoTimingsIsByteIdenticalAcrossRuns) {
  const auto tensors = HandMade();
  ReportFormat format;
  format.timings = false;
  const std::string a = ToJson(MakeReport("m", "cpu", tensors, 0, RunAll(tensors, PlannerNames())), format);
  const std::string b = ToJson(MakeReport("m", "cpu", tensors, 0, RunAll(tensors, PlannerNames())), format);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.find("seconds"), std::string::npos);
  const std::string ha = ToHtml(MakeReport("m", "cpu", tensors, 0, RunAll(tensors, PlannerNames())), format);
  const std::string hb = ToHtml(MakeReport("m", "cpu", tensors, 0, RunAll(tensors, PlannerNames())), format);
  EXPECT_EQ(ha, hb);
  EXPECT_EQ(ha.find(" ms"), std::string::npos);
}

TEST(Html, OneRectPerTensorPerPlanAndEscapedNames) {
  const auto tensors = HandMade();
  const std::vector<std::string> names = {"naive", "greedy-size", "tvm", "dynamic"};
  PlanReport report = MakeReport("hand<1>.onnx", "cpu", tensors, 0, RunAll(tensors, names));
  const std::string html = ToHtml(report, ReportFormat{});
  EXPECT_EQ(Count(html, "<rect class=\"t\""), tensors.size() * names.size());
  EXPECT_EQ(Count(html, "<svg class=\"mem\""), names.size());
  EXPECT_EQ(Count(html, "<line class=\"lb\""), names.size());  // the bound, in every picture
  for (const std::string& n : names) EXPECT_NE(html.find("\">" + n + "</option>"), std::string::npos) << n;
  EXPECT_EQ(Count(html, "<option value=\""), names.size() + 1);  // + "all (stacked)"
  for (const TensorLifetime& t : tensors) {
    EXPECT_EQ(Count(html, "<title>" + HtmlEscape(t.name) + "\n"), names.size()) << t.name;
  }
  EXPECT_NE(html.find("conv2 &quot;&lt;b&gt;&amp;x&quot;"), std::string::npos);
  EXPECT_EQ(html.find("<b>&x"), std::string::npos);  // never raw
  EXPECT_EQ(html.find("hand<1>"), std::string::npos);
  // Self-contained: no external scripts, styles or fetches.
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_NE(html.find("<script>"), std::string::npos);
}

TEST(Report, FailuresAreShownLoudlyEverywhere) {
  const auto tensors = HandMade();
  std::vector<StrategyResult> results = RunAll(tensors, {"greedy-size"});
  StrategyResult broken;
  broken.name = "tvm";
  broken.status = InvalidArgument("tensors 1 and 2 overlap").WithContext("plan of strategy 'tvm' failed CheckPlan");
  results.push_back(broken);
  PlanReport report = MakeReport("m", "cpu", tensors, 0, std::move(results));
  EXPECT_FALSE(report.AllOk());
  const std::string table = FormatTable(report, ReportFormat{});
  EXPECT_NE(table.find("CHECK FAILED"), std::string::npos) << table;
  EXPECT_NE(table.find("tensors 1 and 2 overlap"), std::string::npos);
  JValue root;
  const std::string json = ToJson(report, ReportFormat{});
  ASSERT_TRUE(JsonParser(json).Parse(root)) << json;
  EXPECT_FALSE(root["all_ok"].b);
  ASSERT_EQ(root["strategies"].items.size(), 2u);
  EXPECT_FALSE(root["strategies"].items[1]["ok"].b);
  EXPECT_NE(root["strategies"].items[1]["error"].text.find("failed CheckPlan"), std::string::npos);
  EXPECT_EQ(root["strategies"].items[1]["tensors"].kind, JValue::kNull);  // no placements shown
  const std::string html = ToHtml(report, ReportFormat{});
  EXPECT_NE(html.find("FAILED"), std::string::npos);
  EXPECT_EQ(Count(html, "<rect class=\"t\""), tensors.size());  // only the valid plan is drawn
}

TEST(Table, ListsStrategiesBoundsAndRatios) {
  const auto tensors = HandMade();
  PlanReport report = MakeReport("m", "cuda", tensors, 0, RunAll(tensors, {"naive", "greedy-size"}));
  ReportFormat format;
  format.timings = false;
  const std::string table = FormatTable(report, format);
  EXPECT_NE(table.find("peak-live " + std::to_string(kHandPeak) + " B"), std::string::npos) << table;
  EXPECT_NE(table.find("positional-max " + std::to_string(PositionalMaxLowerBound(tensors))), std::string::npos);
  EXPECT_NE(table.find("naive"), std::string::npos);
  EXPECT_NE(table.find("greedy-size"), std::string::npos);
  EXPECT_EQ(table.find("time(ms)"), std::string::npos);
  // naive = Σ sizes = 11008 B: ratio 11008 / 6144 = 1.792.
  EXPECT_NE(table.find("1.792"), std::string::npos) << table;
}

TEST(Report, EmptyLifetimes) {
  PlanReport report = MakeReport("empty", "cpu", {}, 0, RunAll({}, {"naive", "greedy-size"}));
  EXPECT_EQ(report.peak_live_bound, 0u);
  JValue root;
  ASSERT_TRUE(JsonParser(ToJson(report, ReportFormat{})).Parse(root));
  EXPECT_EQ(root["strategies"].items[0]["ratio_peak_live"].kind, JValue::kNull);
  EXPECT_EQ(Count(ToHtml(report, ReportFormat{}), "<rect class=\"t\""), 0u);
}

}  // namespace
}  // namespace keel::memory
