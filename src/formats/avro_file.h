// Avro object container files (the format of Iceberg's manifests and manifest lists), encoded and decoded by
// libavro. libavro's own file writer cannot serve Iceberg: it writes the schema back from its parsed form, which
// drops the "field-id" attributes readers resolve fields by, and it has no way to add the header metadata Iceberg
// requires ("schema", "partition-spec", ...). So this writer frames the container itself (magic, a header map,
// sync markers, blocks of `count, size, data`), and every byte inside it is encoded by libavro: the records, the
// header map and the block counts. Reading goes through libavro's file reader.
#pragma once

#include <avro.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr {

class AvroFileWriter {
 public:
  // `schema_json` goes into the header as written (attributes included); `metadata` joins it there.
  static Result<AvroFileWriter> create(std::string schema_json, std::map<std::string, std::string> metadata);
  AvroFileWriter(AvroFileWriter&&) noexcept;
  AvroFileWriter& operator=(AvroFileWriter&&) = delete;
  ~AvroFileWriter();

  // Fills a fresh record of the schema through `fill` (libavro's avro_value_t API) and appends it.
  Status append(const std::function<Status(avro_value_t& record)>& fill);
  size_t records() const { return records_; }
  // The whole file.
  Result<std::string> finish();

 private:
  AvroFileWriter() = default;
  Status flush_block();

  avro_schema_t schema_ = nullptr;
  avro_value_iface_t* iface_ = nullptr;
  std::map<std::string, std::string> metadata_;
  std::string schema_json_;
  std::string sync_;   // 16 bytes
  std::string block_;  // encoded records not yet framed
  size_t block_records_ = 0;
  size_t records_ = 0;
  std::string out_;
};

// Calls `visit` for every record of the Avro file `bytes` (any writer schema: fields are found by name).
Status read_avro_file(std::string_view bytes, const std::function<Status(avro_value_t& record)>& visit);

// Accessors for a record's fields by name, for reading; the setters for writing. A union ["null", T] is handled
// by the *_optional forms.
Result<int64_t> avro_get_long(avro_value_t& record, const char* name);
Result<int32_t> avro_get_int(avro_value_t& record, const char* name);
Result<std::string> avro_get_string(avro_value_t& record, const char* name);
Result<std::optional<int64_t>> avro_get_optional_long(avro_value_t& record, const char* name);
Status avro_set_long(avro_value_t& record, const char* name, int64_t v);
Status avro_set_int(avro_value_t& record, const char* name, int32_t v);
Status avro_set_string(avro_value_t& record, const char* name, std::string_view v);
Status avro_set_bool(avro_value_t& record, const char* name, bool v);
// Sets the union field to its null branch (0) or its value branch (1), returning the value to fill.
Status avro_set_null(avro_value_t& record, const char* name);
Result<avro_value_t> avro_set_branch(avro_value_t& record, const char* name, int branch);
Result<avro_value_t> avro_field(avro_value_t& record, const char* name);

}  // namespace skippr
