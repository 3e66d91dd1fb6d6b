#include "formats/avro_file.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstring>

namespace skippr {
namespace {

// Records are framed into blocks of about this many bytes (Avro's own writers use 16-64 KiB).
constexpr size_t kBlockBytes = 64 << 10;

Error avro_error(std::string_view what) {
  return Error{ErrorKind::kInternal, fmt::format("{}: {}", what, avro_strerror())};
}

// One value of `schema_json` built by `fill` and encoded by libavro.
Result<std::string> encode_value(const char* schema_json, const std::function<int(avro_value_t&)>& fill) {
  avro_schema_t schema = nullptr;
  if (avro_schema_from_json_length(schema_json, std::strlen(schema_json), &schema)) {
    return std::unexpected(avro_error("avro schema"));
  }
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t value;
  avro_generic_value_new(iface, &value);
  std::string out;
  size_t size = 0;
  int rc = fill(value);
  if (rc == 0) rc = avro_value_sizeof(&value, &size);
  if (rc == 0) {
    out.resize(size);
    avro_writer_t writer = avro_writer_memory(out.data(), static_cast<int64_t>(out.size()));
    rc = avro_value_write(writer, &value);
    avro_writer_free(writer);
  }
  avro_value_decref(&value);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  if (rc) return std::unexpected(avro_error("encoding avro"));
  return out;
}

Result<std::string> encode_long(int64_t v) {
  return encode_value(R"("long")", [v](avro_value_t& value) { return avro_value_set_long(&value, v); });
}

}  // namespace

Result<AvroFileWriter> AvroFileWriter::create(std::string schema_json, std::map<std::string, std::string> metadata) {
  AvroFileWriter w;
  if (avro_schema_from_json_length(schema_json.data(), schema_json.size(), &w.schema_)) {
    return std::unexpected(avro_error("avro schema"));
  }
  w.iface_ = avro_generic_class_from_schema(w.schema_);
  w.schema_json_ = std::move(schema_json);
  w.metadata_ = std::move(metadata);
  w.sync_.resize(16);
  RAND_bytes(reinterpret_cast<unsigned char*>(w.sync_.data()), 16);
  return w;
}

AvroFileWriter::AvroFileWriter(AvroFileWriter&& other) noexcept
    : schema_(std::exchange(other.schema_, nullptr)),
      iface_(std::exchange(other.iface_, nullptr)),
      metadata_(std::move(other.metadata_)),
      schema_json_(std::move(other.schema_json_)),
      sync_(std::move(other.sync_)),
      block_(std::move(other.block_)),
      block_records_(other.block_records_),
      records_(other.records_),
      out_(std::move(other.out_)) {}

AvroFileWriter::~AvroFileWriter() {
  if (iface_) avro_value_iface_decref(iface_);
  if (schema_) avro_schema_decref(schema_);
}

Status AvroFileWriter::append(const std::function<Status(avro_value_t& record)>& fill) {
  avro_value_t record;
  avro_generic_value_new(iface_, &record);
  struct Release {
    avro_value_t& v;
    ~Release() { avro_value_decref(&v); }
  } release{record};
  SKIPPR_TRY(fill(record));
  size_t size = 0;
  if (avro_value_sizeof(&record, &size)) return std::unexpected(avro_error("sizing an avro record"));
  const size_t at = block_.size();
  block_.resize(at + size);
  avro_writer_t writer = avro_writer_memory(block_.data() + at, static_cast<int64_t>(size));
  const int rc = avro_value_write(writer, &record);
  avro_writer_free(writer);
  if (rc) return std::unexpected(avro_error("encoding an avro record"));
  ++block_records_;
  ++records_;
  if (block_.size() >= kBlockBytes) return flush_block();
  return ok();
}

Status AvroFileWriter::flush_block() {
  if (block_records_ == 0) return ok();
  auto count = encode_long(static_cast<int64_t>(block_records_));
  if (!count) return std::unexpected(count.error());
  auto size = encode_long(static_cast<int64_t>(block_.size()));
  if (!size) return std::unexpected(size.error());
  out_ += *count;
  out_ += *size;
  out_ += block_;
  out_ += sync_;
  block_.clear();
  block_records_ = 0;
  return ok();
}

Result<std::string> AvroFileWriter::finish() {
  std::map<std::string, std::string> header = metadata_;
  header["avro.schema"] = schema_json_;
  header["avro.codec"] = "null";
  auto map = encode_value(R"({"type":"map","values":"bytes"})", [&header](avro_value_t& value) {
    for (const auto& [key, text] : header) {
      avro_value_t element;
      if (int rc = avro_value_add(&value, key.c_str(), &element, nullptr, nullptr)) return rc;
      if (int rc = avro_value_set_bytes(&element, const_cast<char*>(text.data()), text.size())) return rc;
    }
    return 0;
  });
  if (!map) return std::unexpected(map.error());
  SKIPPR_TRY(flush_block());
  std::string file = std::string("Obj\x01", 4) + *map + sync_;
  file += out_;
  out_.clear();
  return file;
}

Status read_avro_file(std::string_view bytes, const std::function<Status(avro_value_t& record)>& visit) {
  // libavro reads containers from a FILE*; the bytes are in memory.
  std::FILE* fp = fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "rb");
  if (!fp) return fail(ErrorKind::kInternal, "fmemopen failed");
  avro_file_reader_t reader = nullptr;
  if (avro_file_reader_fp(fp, "avro", 1, &reader)) {
    return fail(ErrorKind::kBadInput, fmt::format("not an Avro file: {}", avro_strerror()));
  }
  avro_schema_t schema = avro_file_reader_get_writer_schema(reader);
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t record;
  avro_generic_value_new(iface, &record);
  Status status = ok();
  while (status) {
    const int rc = avro_file_reader_read_value(reader, &record);
    if (rc == EOF) break;
    if (rc) {
      status = fail(ErrorKind::kBadInput, fmt::format("reading an Avro file: {}", avro_strerror()));
      break;
    }
    status = visit(record);
  }
  avro_value_decref(&record);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);  // the reader handed out a reference
  avro_file_reader_close(reader);
  return status;
}

Result<avro_value_t> avro_field(avro_value_t& record, const char* name) {
  avro_value_t field;
  if (avro_value_get_by_name(&record, name, &field, nullptr)) {
    return fail(ErrorKind::kBadInput, fmt::format("Avro record has no field '{}'", name));
  }
  return field;
}

namespace {
// The value inside a union, or the value itself; nullopt for the null branch.
Result<std::optional<avro_value_t>> unwrap(avro_value_t value) {
  if (avro_value_get_type(&value) != AVRO_UNION) return std::optional<avro_value_t>(value);
  avro_value_t branch;
  if (avro_value_get_current_branch(&value, &branch)) return std::unexpected(avro_error("avro union"));
  if (avro_value_get_type(&branch) == AVRO_NULL) return std::optional<avro_value_t>();
  return std::optional<avro_value_t>(branch);
}
}  // namespace

Result<std::optional<int64_t>> avro_get_optional_long(avro_value_t& record, const char* name) {
  auto field = avro_field(record, name);
  if (!field) return std::unexpected(field.error());
  auto value = unwrap(*field);
  if (!value) return std::unexpected(value.error());
  if (!*value) return std::optional<int64_t>();
  int64_t v = 0;
  if (avro_value_get_type(&**value) == AVRO_INT32) {
    int32_t i = 0;
    if (avro_value_get_int(&**value, &i)) return std::unexpected(avro_error(name));
    v = i;
  } else if (avro_value_get_long(&**value, &v)) {
    return std::unexpected(avro_error(name));
  }
  return std::optional<int64_t>(v);
}

Result<int64_t> avro_get_long(avro_value_t& record, const char* name) {
  auto v = avro_get_optional_long(record, name);
  if (!v) return std::unexpected(v.error());
  if (!*v) return fail(ErrorKind::kBadInput, fmt::format("Avro field '{}' is null", name));
  return **v;
}

Result<int32_t> avro_get_int(avro_value_t& record, const char* name) {
  auto v = avro_get_long(record, name);
  if (!v) return std::unexpected(v.error());
  return static_cast<int32_t>(*v);
}

Result<std::string> avro_get_string(avro_value_t& record, const char* name) {
  auto field = avro_field(record, name);
  if (!field) return std::unexpected(field.error());
  auto value = unwrap(*field);
  if (!value) return std::unexpected(value.error());
  if (!*value) return fail(ErrorKind::kBadInput, fmt::format("Avro field '{}' is null", name));
  const char* text = nullptr;
  size_t size = 0;
  if (avro_value_get_string(&**value, &text, &size)) return std::unexpected(avro_error(name));
  return std::string(text, size > 0 ? size - 1 : 0);  // libavro counts the terminating NUL
}

Status avro_set_long(avro_value_t& record, const char* name, int64_t v) {
  auto field = avro_field(record, name);
  if (!field) return std::unexpected(field.error());
  if (avro_value_set_long(&*field, v)) return std::unexpected(avro_error(name));
  return ok();
}

Status avro_set_int(avro_value_t& record, const char* name, int32_t v) {
  auto field = avro_field(record, name);
  if (!field) return std::unexpected(field.error());
  if (avro_value_set_int(&*field, v)) return std::unexpected(avro_error(name));
  return ok();
}

Status avro_set_string(avro_value_t& record, const char* name, std::string_view v) {
  auto field = avro_field(record, name);
  if (!field) return std::unexpected(field.error());
  const std::string text(v);  // libavro takes the terminating NUL too
  if (avro_value_set_string_len(&*field, text.c_str(), text.size() + 1)) return std::unexpected(avro_error(name));
  return ok();
}

Status avro_set_bool(avro_value_t& record, const char* name, bool v) {
  auto field = avro_field(record, name);
  if (!field) return std::unexpected(field.error());
  if (avro_value_set_boolean(&*field, v)) return std::unexpected(avro_error(name));
  return ok();
}

Result<avro_value_t> avro_set_branch(avro_value_t& record, const char* name, int branch) {
  auto field = avro_field(record, name);
  if (!field) return std::unexpected(field.error());
  avro_value_t value;
  if (avro_value_set_branch(&*field, branch, &value)) return std::unexpected(avro_error(name));
  return value;
}

Status avro_set_null(avro_value_t& record, const char* name) {
  auto value = avro_set_branch(record, name, 0);
  if (!value) return std::unexpected(value.error());
  if (avro_value_set_null(&*value)) return std::unexpected(avro_error(name));
  return ok();
}

}  // namespace skippr
