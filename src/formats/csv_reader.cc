#include "formats/csv_reader.h"

#include <fmt/format.h>
#include <simdjson.h>

namespace skippr {

namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

std::string_view strip_record(std::string_view text, bool at_file_start) {
  if (at_file_start && text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  if (text.ends_with('\r')) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<std::string> CsvReader::split(std::string_view record) {
  fields_.clear();
  scratch_.clear();
  const char delim = options_.delimiter, quote = options_.quote;
  size_t i = 0;
  while (true) {
    Field f;
    f.begin = scratch_.size();
    if (i < record.size() && record[i] == quote) {
      f.quoted = true;
      ++i;
      bool closed = false;
      while (i < record.size()) {
        const char c = record[i++];
        if (c != quote) {
          scratch_.push_back(c);
        } else if (i < record.size() && record[i] == quote) {
          scratch_.push_back(quote);  // "" inside quotes is one quote
          ++i;
        } else {
          closed = true;
          break;
        }
      }
      if (!closed) return fmt::format("field {} has an unterminated quote", fields_.size() + 1);
      if (i < record.size() && record[i] != delim) {
        return fmt::format("field {} has text after its closing quote", fields_.size() + 1);
      }
    } else {
      const size_t end = record.find(delim, i);
      const size_t stop = end == std::string_view::npos ? record.size() : end;
      scratch_.append(record.substr(i, stop - i));
      i = stop;
    }
    f.end = scratch_.size();
    fields_.push_back(f);
    if (i >= record.size()) break;
    ++i;                       // the delimiter
    if (i == record.size()) {  // a trailing delimiter: one more, empty field
      fields_.push_back({scratch_.size(), scratch_.size(), false});
      break;
    }
  }
  return std::nullopt;
}

Status CsvReader::read_header(RecordBuffer& in, const std::string& file) {
  if (!options_.header) return ok();
  auto record = in.next(options_.quote);
  if (!record) return std::unexpected(record.error());
  names_.clear();
  if (!*record) return ok();  // an empty file
  if (auto why = split(strip_record((*record)->text, true))) {
    return fail(ErrorKind::kBadInput, fmt::format("{}: the header line cannot be read: {}", file, *why));
  }
  for (const auto& f : fields_) {
    std::string name = scratch_.substr(f.begin, f.end - f.begin);
    if (name.empty()) name = fmt::format("column_{}", names_.size() + 1);
    for (const auto& existing : names_) {
      if (existing == name) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("{}: the header names column '{}' twice; rename one of them", file, name));
      }
    }
    names_.push_back(std::move(name));
  }
  return ok();
}

Result<bool> CsvReader::read(RecordBuffer& in, RowBuilder& rows, std::vector<DeadLetter>& dead,
                             const ReadLimits& limits, ReadProgress& progress, const std::string& file) {
  size_t& bytes = progress.bytes;
  size_t& count = progress.rows;
  while (count < limits.max_rows && bytes < limits.max_bytes) {
    const bool first = in.offset() == 0;
    auto record = in.next(options_.quote);
    if (!record) return std::unexpected(record.error());
    if (!*record) return true;
    const std::string_view text = strip_record((*record)->text, first);
    bytes += (*record)->text.size() + 1;
    if (text.empty()) continue;  // a blank line is no record
    ++count;
    auto why = split(text);
    if (!why && !simdjson::validate_utf8(scratch_.data(), scratch_.size())) why = "not valid UTF-8";
    if (!why && names_.empty()) {
      for (size_t k = 0; k < fields_.size(); ++k) names_.push_back(fmt::format("column_{}", k + 1));
    }
    if (!why && fields_.size() != names_.size()) {
      why = fmt::format("{} fields where the header has {}", fields_.size(), names_.size());
    }
    if (!why) {
      rows.begin_row();
      for (size_t k = 0; k < fields_.size() && !why; ++k) {
        FieldValue v;
        v.type = Type::kString;
        v.s = std::string_view(scratch_).substr(fields_[k].begin, fields_[k].end - fields_[k].begin);
        v.null = !fields_[k].quoted && v.s == options_.null_string;
        why = rows.set(names_[k], v);
      }
      if (!why) rows.end_row();
    }
    if (why) dead.push_back({file, (*record)->line, std::move(*why), std::string((*record)->text)});
  }
  return false;
}

}  // namespace skippr
