#include "formats/jsonl_reader.h"

#include <fmt/format.h>

namespace skippr {

namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

}  // namespace

std::string_view JsonlReader::nested_text(std::string_view text, size_t index) {
  if (raw_failed_) return {};
  const std::string_view raw = raw_value(text, index);
  if (raw.empty()) {
    raw_failed_ = true;  // the walk is lost: the row's later nested values come from the DOM too
    return {};
  }
  std::string out(raw.size(), '\0');
  size_t length = 0;
  if (simdjson::minify(raw.data(), raw.size(), out.data(), length)) return {};
  out.resize(length);
  nested_.push_back(std::move(out));
  return nested_.back();
}

std::string_view JsonlReader::raw_value(std::string_view text, size_t index) {
  if (!raw_started_) {
    raw_started_ = true;
    raw_index_ = 0;
    // The record sits in RecordBuffer's padded buffer, so the on-demand reader needs no copy either.
    const simdjson::padded_string_view padded(text.data(), text.size(), text.size() + simdjson::SIMDJSON_PADDING);
    if (raw_parser_.iterate(padded).get(raw_doc_) || raw_doc_.get_object().get(raw_object_) ||
        raw_object_.begin().get(raw_field_)) {
      return {};
    }
  }
  for (; raw_index_ < index; ++raw_index_) {
    simdjson::ondemand::field skipped;
    // The key is read first (operator*): only then does ++ skip the value that was not read.
    if (raw_field_ == raw_object_.end() || (*raw_field_).get(skipped)) return {};
    ++raw_field_;
  }
  if (raw_field_ == raw_object_.end()) return {};
  simdjson::ondemand::field field;
  if ((*raw_field_).get(field)) return {};
  simdjson::ondemand::value value = field.value();
  simdjson::ondemand::json_type type;
  if (value.type().get(type)) return {};
  std::string_view raw;
  if (type == simdjson::ondemand::json_type::object) {
    simdjson::ondemand::object inner;
    if (value.get_object().get(inner) || inner.raw_json().get(raw)) return {};
  } else if (type == simdjson::ondemand::json_type::array) {
    simdjson::ondemand::array inner;
    if (value.get_array().get(inner) || inner.raw_json().get(raw)) return {};
  } else {
    return {};
  }
  ++raw_field_;
  ++raw_index_;
  return raw;
}

std::optional<std::string> JsonlReader::add_object(simdjson::dom::object object, std::string_view text,
                                                   RowBuilder& rows) {
  nested_.clear();
  nested_.reserve(object.size());  // at most one per field: string_views into nested_ survive until end_row()
  raw_started_ = false;
  raw_failed_ = false;
  rows.begin_row();
  size_t index = 0;
  for (auto [key, element] : object) {
    FieldValue v;
    switch (element.type()) {
      case simdjson::dom::element_type::INT64:
        v.type = Type::kInt64;
        v.i = element.get_int64().value_unsafe();
        break;
      case simdjson::dom::element_type::UINT64:  // above INT64_MAX: the nearest double, as JSON readers do
        v.type = Type::kDouble;
        v.d = static_cast<double>(element.get_uint64().value_unsafe());
        break;
      case simdjson::dom::element_type::DOUBLE:
        v.type = Type::kDouble;
        v.d = element.get_double().value_unsafe();
        break;
      case simdjson::dom::element_type::BOOL:
        v.type = Type::kBool;
        v.i = element.get_bool().value_unsafe() ? 1 : 0;
        break;
      case simdjson::dom::element_type::STRING:
        v.type = Type::kString;
        v.s = element.get_string().value_unsafe();
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        v.null = true;
        break;
      case simdjson::dom::element_type::ARRAY:
      case simdjson::dom::element_type::OBJECT:
        v.type = Type::kJson;
        v.s = nested_text(text, index);
        if (v.s.empty()) {
          nested_.push_back(simdjson::minify(element));
          v.s = nested_.back();
        }
        break;
    }
    ++index;
    const NestedContext context{this, element};
    v.as_json = [](const void* p) -> std::string_view {
      const auto* ctx = static_cast<const NestedContext*>(p);
      ctx->self->nested_.push_back(simdjson::minify(ctx->element));
      return ctx->self->nested_.back();
    };
    v.as_json_context = &context;
    if (auto why = rows.set(key, v)) return why;
  }
  rows.end_row();
  return std::nullopt;
}

Result<bool> JsonlReader::read(RecordBuffer& in, RowBuilder& rows, std::vector<DeadLetter>& dead,
                               const ReadLimits& limits, ReadProgress& progress, const std::string& file) {
  size_t& bytes = progress.bytes;
  size_t& count = progress.rows;
  while (count < limits.max_rows && bytes < limits.max_bytes) {
    const bool first = in.offset() == 0;
    auto record = in.next();
    if (!record) return std::unexpected(record.error());
    if (!*record) return true;
    std::string_view text = (*record)->text;
    if (first && text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
    bytes += text.size() + 1;
    if (is_blank(text)) continue;
    ++count;
    // The record sits in RecordBuffer's padded buffer: simdjson may read past its end without a copy.
    auto parsed = parser_.parse(text.data(), text.size(), false);
    std::optional<std::string> why;
    if (parsed.error()) {
      why = fmt::format("not valid JSON: {}", simdjson::error_message(parsed.error()));
    } else if (!parsed.value_unsafe().is_object()) {
      why = "a JSON line must be an object";
    } else {
      why = add_object(parsed.value_unsafe().get_object().value_unsafe(), text, rows);
    }
    if (why) dead.push_back({file, (*record)->line, std::move(*why), std::string(text)});
  }
  return false;
}

}  // namespace skippr
