// compiler/memory/buffer_csv.cc — MiniMalloc-format CSV problems and solutions
// (format in buffer_csv.h).
//
// Both entry points feed lines to one RowReader, so a file is parsed as it is read
// (a 10^7-row file is refused at row kMaxCsvBuffers + 1 without being loaded).
#include "compiler/memory/buffer_csv.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <unordered_map>

#include "common/regular_file.h"
#include "compiler/memory/planning_support.h"

namespace keel::memory {

namespace {

constexpr int64_t kMaxStep = std::numeric_limits<int32_t>::max();  // upper <= this

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    fields.push_back(Trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos
                                                                              : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

// The columns the reader knows; -1 when absent.
struct Columns {
  int id = -1, lower = -1, upper = -1, end = -1, size = -1, alignment = -1, alias = -1, offset = -1;
};

class RowReader {
 public:
  explicit RowReader(std::string source) : source_(std::move(source)) {}

  // One line of the file (without its '\n'); `line_number` counts from 1.
  Status Line(std::string_view line, size_t line_number) {
    line_number_ = line_number;
    if (Trim(line).empty()) return Status::Ok();  // blank lines (a trailing one is common)
    if (!have_header_) return Header(line);
    return Row(line);
  }

  Result<std::vector<TensorLifetime>> Finish() {
    if (!have_header_) return InvalidArgument(source_ + ": empty file (expected a header such as id,lower,upper,size)");
    for (const auto& [row, alias_id] : pending_aliases_) {
      auto it = index_of_.find(alias_id);
      if (it == index_of_.end()) {
        return Error(alias_lines_[row], "alias '" + alias_id + "' names no buffer of the file");
      }
      TensorLifetime& t = tensors_[row];
      const TensorLifetime& a = tensors_[it->second];
      if (it->second == row || a.last_use != t.first_use) {
        return Error(alias_lines_[row], "alias '" + alias_id +
                                            "' must name another buffer whose upper is this buffer's lower + 1");
      }
      t.may_alias_with = static_cast<int32_t>(it->second);
    }
    return std::move(tensors_);
  }

 private:
  Status Error(size_t line, const std::string& what) const {
    return InvalidArgument(source_ + ":" + std::to_string(line) + ": " + what);
  }
  Status Error(const std::string& what) const { return Error(line_number_, what); }

  Status Header(std::string_view line) {
    const std::vector<std::string_view> names = SplitFields(line);
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string_view n = names[i];
      int* slot = nullptr;
      if (n == "id" || n == "buffer") slot = &cols_.id;
      else if (n == "lower" || n == "start") slot = &cols_.lower;
      else if (n == "upper") slot = &cols_.upper;
      else if (n == "end") slot = &cols_.end;
      else if (n == "size") slot = &cols_.size;
      else if (n == "alignment") slot = &cols_.alignment;
      else if (n == "alias") slot = &cols_.alias;
      else if (n == "offset") slot = &cols_.offset;
      if (slot == nullptr) continue;  // unknown columns are ignored (as MiniMalloc does)
      if (*slot != -1) return Error("column '" + std::string(n) + "' appears twice (or with its synonym)");
      *slot = static_cast<int>(i);
    }
    std::string missing;
    if (cols_.id == -1) missing += " id";
    if (cols_.lower == -1) missing += " lower";
    if (cols_.upper == -1 && cols_.end == -1) missing += " upper";
    if (cols_.size == -1) missing += " size";
    if (!missing.empty()) {
      return Error("missing column(s):" + missing + " (header must name id,lower,upper,size)");
    }
    if (cols_.upper != -1 && cols_.end != -1) return Error("both 'upper' and 'end' columns given; use one");
    num_columns_ = names.size();
    have_header_ = true;
    return Status::Ok();
  }

  // A decimal integer in [lo, hi]; `what` names the column in errors.
  Status Integer(std::string_view text, const char* what, int64_t lo, int64_t hi, int64_t* out) const {
    if (text.empty()) return Error(std::string(what) + " is empty");
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range) {
      return Error(std::string(what) + " '" + std::string(text) + "' is out of range");
    }
    if (ec != std::errc() || end != text.data() + text.size()) {
      return Error(std::string(what) + " '" + std::string(text) + "' is not an integer");
    }
    if (v < lo || v > hi) {
      return Error(std::string(what) + " " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                   std::to_string(hi) + "]");
    }
    *out = v;
    return Status::Ok();
  }

  Status Row(std::string_view line) {
    if (tensors_.size() >= kMaxCsvBuffers) {
      return Error("more than " + std::to_string(kMaxCsvBuffers) + " buffers (the limit of a CSV problem)");
    }
    const std::vector<std::string_view> f = SplitFields(line);
    if (f.size() != num_columns_) {
      return Error(std::to_string(f.size()) + " fields where the header has " + std::to_string(num_columns_));
    }
    TensorLifetime t;
    t.alignment = 1;
    t.device = Device::kCpu;
    const std::string_view id = f[cols_.id];
    if (id.empty()) return Error("empty id");
    if (id.find('"') != std::string_view::npos) return Error("quoted fields are not supported (id " + std::string(id) + ")");
    t.name = std::string(id);
    int64_t lower = 0, upper = 0, size = 0;
    KEEL_RETURN_IF_ERROR(Integer(f[cols_.lower], "lower", 0, kMaxStep - 1, &lower));
    if (cols_.upper != -1) {
      KEEL_RETURN_IF_ERROR(Integer(f[cols_.upper], "upper", std::numeric_limits<int64_t>::min(), kMaxStep, &upper));
    } else {
      int64_t end = 0;
      KEEL_RETURN_IF_ERROR(Integer(f[cols_.end], "end", std::numeric_limits<int64_t>::min(), kMaxStep - 1, &end));
      upper = end + 1;
    }
    if (upper <= lower) {
      return Error("upper " + std::to_string(upper) + " <= lower " + std::to_string(lower) +
                   " (lifetimes are half-open [lower, upper) and must not be empty)");
    }
    KEEL_RETURN_IF_ERROR(Integer(f[cols_.size], "size", 0, static_cast<int64_t>(internal::kMaxTotalBytes), &size));
    if (static_cast<uint64_t>(size) > internal::kMaxTotalBytes - total_bytes_) {
      return Error("the sizes add up to more than 2^60 bytes");
    }
    total_bytes_ += static_cast<uint64_t>(size);
    if (cols_.alignment != -1) {
      int64_t a = 0;
      KEEL_RETURN_IF_ERROR(Integer(f[cols_.alignment], "alignment", 1, internal::kMaxAlignment, &a));
      if (!internal::IsPowerOfTwo(static_cast<uint64_t>(a))) {
        return Error("alignment " + std::to_string(a) + " is not a power of two");
      }
      t.alignment = static_cast<uint32_t>(a);
    }
    if (cols_.offset != -1) {
      int64_t ignored = 0;
      KEEL_RETURN_IF_ERROR(Integer(f[cols_.offset], "offset", 0, std::numeric_limits<int64_t>::max(), &ignored));
    }
    t.first_use = static_cast<int32_t>(lower);
    t.last_use = static_cast<int32_t>(upper - 1);
    t.size = static_cast<uint64_t>(size);
    if (!index_of_.emplace(t.name, tensors_.size()).second) return Error("duplicate id '" + t.name + "'");
    if (cols_.alias != -1 && !f[cols_.alias].empty()) {
      pending_aliases_.emplace_back(tensors_.size(), std::string(f[cols_.alias]));
      alias_lines_[tensors_.size()] = line_number_;
    }
    tensors_.push_back(std::move(t));
    return Status::Ok();
  }

  std::string source_;
  size_t line_number_ = 0;
  bool have_header_ = false;
  size_t num_columns_ = 0;
  Columns cols_;
  uint64_t total_bytes_ = 0;
  std::vector<TensorLifetime> tensors_;
  std::unordered_map<std::string, size_t> index_of_;
  std::vector<std::pair<size_t, std::string>> pending_aliases_;  // (row, alias id)
  std::unordered_map<size_t, size_t> alias_lines_;                // row -> line number
};

bool UsableAsId(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c == ',' || c == '"' || c == '\n' || c == '\r' || c == ' ' || c == '\t') return false;
  }
  return true;
}

}  // namespace

Result<std::vector<TensorLifetime>> ParseBufferCsv(const std::string& text, const std::string& source) {
  RowReader reader(source);
  size_t start = 0, line = 1;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    KEEL_RETURN_IF_ERROR(reader.Line(std::string_view(text).substr(start, nl - start), line));
    start = nl + 1;
    ++line;
  }
  return reader.Finish();
}

Result<std::vector<TensorLifetime>> ReadBufferCsv(const std::string& path) {
  KEEL_ASSIGN_OR_RETURN(common::RegularFile file, common::RegularFile::Open(path, "buffer file '" + path + "'"));
  RowReader reader(path);
  constexpr size_t kChunk = size_t{1} << 20;
  std::string buffer, pending;
  size_t line = 1;
  for (uint64_t pos = 0; pos < file.size();) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, file.size() - pos));
    buffer.resize(n);
    KEEL_RETURN_IF_ERROR(file.ReadAt(pos, buffer.data(), n, "buffer file '" + path + "'"));
    pos += n;
    size_t start = 0;
    for (size_t nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n', start)) {
      if (pending.empty()) {
        KEEL_RETURN_IF_ERROR(reader.Line(std::string_view(buffer).substr(start, nl - start), line));
      } else {
        pending.append(buffer, start, nl - start);
        KEEL_RETURN_IF_ERROR(reader.Line(pending, line));
        pending.clear();
      }
      ++line;
      start = nl + 1;
    }
    pending.append(buffer, start, std::string::npos);
    if (pending.size() > kChunk) {
      return InvalidArgument(path + ":" + std::to_string(line) + ": line longer than 1 MiB");
    }
  }
  if (!pending.empty()) KEEL_RETURN_IF_ERROR(reader.Line(pending, line));
  return reader.Finish();
}

Result<std::string> FormatBufferCsv(const std::vector<TensorLifetime>& tensors, const std::vector<uint64_t>* offsets) {
  if (offsets != nullptr && offsets->size() != tensors.size()) {
    return InvalidArgument("buffer CSV: " + std::to_string(offsets->size()) + " offsets for " +
                           std::to_string(tensors.size()) + " buffers");
  }
  bool any_alignment = false, any_alias = false, names_ok = true;
  std::unordered_map<std::string, size_t> seen;
  for (const TensorLifetime& t : tensors) {
    if (t.device != tensors.front().device) {
      return InvalidArgument("buffer CSV: the buffers are on more than one device; the format has one address space");
    }
    any_alignment = any_alignment || t.alignment != 1;
    any_alias = any_alias || t.may_alias_with >= 0;
    names_ok = names_ok && UsableAsId(t.name) && seen.emplace(t.name, 0).second;
  }
  auto id = [&](size_t i) { return names_ok ? tensors[i].name : std::to_string(i); };
  std::string out = "id,lower,upper,size";
  if (any_alignment) out += ",alignment";
  if (any_alias) out += ",alias";
  if (offsets != nullptr) out += ",offset";
  out += '\n';
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorLifetime& t = tensors[i];
    out += id(i) + ',' + std::to_string(t.first_use) + ',' + std::to_string(int64_t{t.last_use} + 1) + ',' +
           std::to_string(t.size);
    if (any_alignment) out += ',' + std::to_string(t.alignment);
    if (any_alias) {
      out += ',';
      if (t.may_alias_with >= 0) out += id(static_cast<size_t>(t.may_alias_with));
    }
    if (offsets != nullptr) out += ',' + std::to_string((*offsets)[i]);
    out += '\n';
  }
  return out;
}

Result<std::vector<uint64_t>> SingleArenaAddresses(const Plan& plan) {
  if (plan.arenas.size() != 1) {
    return FailedPrecondition("plan '" + plan.strategy + "' has " + std::to_string(plan.arenas.size()) +
                              " arenas; a solution needs every buffer in one arena");
  }
  std::vector<uint64_t> addresses;
  addresses.reserve(plan.placements.size());
  for (const Placement& p : plan.placements) {
    if (p.storage < 0 || static_cast<size_t>(p.storage) >= plan.storages.size() ||
        plan.storages[p.storage].arena != 0) {
      return FailedPrecondition("plan '" + plan.strategy + "' keeps a buffer outside its arena");
    }
    addresses.push_back(plan.storages[p.storage].offset + p.offset);
  }
  return addresses;
}

}  // namespace keel::memory
