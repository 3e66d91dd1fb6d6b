#include "sources/file/file_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "formats/compression.h"
#include "formats/csv_reader.h"
#include "formats/jsonl_reader.h"
#include "formats/parquet_reader.h"
#include "formats/record_buffer.h"
#include "sources/file/file_position.h"
#include "sources/file/glob.h"

namespace skippr {

namespace {

enum class FileFormat { kJsonl, kCsv, kParquet };

std::optional<FileFormat> format_from_string(std::string_view name) {
  if (name == "jsonl") return FileFormat::kJsonl;
  if (name == "csv") return FileFormat::kCsv;
  if (name == "parquet") return FileFormat::kParquet;
  return std::nullopt;
}

// The format a file's name says, after its compression extension: a.jsonl.gz -> jsonl.
std::optional<FileFormat> format_from_extension(const std::filesystem::path& path) {
  std::filesystem::path p = path;
  if (compression_from_extension(p) != Compression::kNone) p = p.stem();
  const auto ext = p.extension().string();
  if (ext == ".jsonl" || ext == ".ndjson" || ext == ".json") return FileFormat::kJsonl;
  if (ext == ".csv" || ext == ".tsv") return FileFormat::kCsv;
  if (ext == ".parquet") return FileFormat::kParquet;
  return std::nullopt;
}

Result<FileIdentity> identity_of(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return fail(ErrorKind::kBadInput, fmt::format("{} can no longer be read: {}", path.string(), std::strerror(errno)));
  }
  return FileIdentity{static_cast<uint64_t>(st.st_size),
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

struct FileSourceOptions {
  std::string name;  // the source's name in skippr.yml
  GlobPattern pattern;
  std::string pattern_text;
  std::optional<FileFormat> format;        // nullopt: from each file's extension
  std::optional<Compression> compression;  // nullopt (auto): from each file's extension
  CsvOptions csv;
};

// One file being read: its reader for the format, and where it is.
struct OpenFile {
  CurrentFile where;
  std::filesystem::path path;
  FileFormat format = FileFormat::kJsonl;
  std::unique_ptr<RecordBuffer> buffer;  // jsonl, csv
  std::unique_ptr<CsvReader> csv;
  std::unique_ptr<ParquetReader> parquet;
};

class FileSource final : public Source {
 public:
  explicit FileSource(FileSourceOptions options) : options_(std::move(options)) {}

  Status open() override {
    std::error_code ec;
    if (!std::filesystem::is_directory(options_.pattern.base, ec)) {
      spdlog::warn("File source '{}': folder {} does not exist (yet); no file matches {}", options_.name,
                   options_.pattern.base.string(), options_.pattern_text);
    }
    return ok();
  }

  // Its positions name data that can be read again from there, whoever committed them.
  bool resumes_from_destination() const override { return true; }
  Status seek(const Position& position) override {
    current_.reset();
    done_.clear();
    resume_.reset();
    rows_ = RowBuilder{};
    if (position.empty()) return ok();
    auto decoded = decode_file_position(position);
    if (!decoded) {
      return fail(ErrorKind::kCorruption,
                  fmt::format("File source '{}': unreadable resume position '{}'", options_.name, position.token));
    }
    done_ = std::move(decoded->done);
    resume_ = std::move(decoded->current);
    rows_.restore_types(std::move(decoded->types));
    return ok();
  }

  Result<Poll> poll(const Budget& budget) override {
    Poll out;
    const ReadLimits limits{budget.max_rows, std::max<size_t>(budget.max_bytes, 1)};
    ReadProgress progress;
    while (progress.rows < limits.max_rows && progress.bytes < limits.max_bytes) {
      if (!current_) {
        auto opened = open_next();
        if (!opened) return std::unexpected(opened.error());
        if (!*opened) {
          out.drained = true;
          break;
        }
      }
      auto finished = read_some(out.dead_letters, limits, progress);
      if (!finished && skip_damaged_rest(finished.error(), out.dead_letters)) continue;
      if (!finished) return std::unexpected(finished.error());
      if (*finished) {
        done_.insert(current_->where.name);
        current_.reset();
      } else {
        current_->where.offset = current_->parquet ? current_->parquet->next_row() : current_->buffer->offset();
        current_->where.line = current_->parquet ? current_->parquet->next_row() + 1 : current_->buffer->next_line();
      }
    }
    out.records = rows_.take();
    FilePosition p{done_, std::nullopt, rows_.types()};
    if (current_) p.current = current_->where;
    out.position_after = encode_file_position(p);
    return out;
  }

 private:
  // Opens the file to resume, else the first matching file not read yet. false: nothing to read right now.
  Result<bool> open_next() {
    if (resume_) {
      CurrentFile where = *resume_;
      resume_.reset();
      return open_file(where);
    }
    auto files = expand_glob(options_.pattern);
    if (!files) return std::unexpected(files.error());
    for (const auto& path : *files) {
      std::string name = path.lexically_relative(options_.pattern.base).generic_string();
      if (done_.contains(name)) continue;
      auto identity = identity_of(path);
      if (!identity) return std::unexpected(identity.error());
      return open_file(CurrentFile{std::move(name), 0, 1, *identity});
    }
    return false;
  }

  Result<bool> open_file(const CurrentFile& where) {
    const std::filesystem::path path = options_.pattern.base / where.name;
    auto identity = identity_of(path);
    if (!identity) return std::unexpected(identity.error());
    if (*identity != where.identity) {
      return fail(ErrorKind::kBadInput,
                  fmt::format("File source '{}': {} changed after it was partly read (size {} -> {} bytes, mtime "
                              "changed: {}); a changed file is never re-read silently. Put the original back, or "
                              "RESET PIPELINE to read every file again",
                              options_.name, path.string(), where.identity.size, identity->size,
                              where.identity.mtime_ns != identity->mtime_ns ? "yes" : "no"));
    }
    auto format = options_.format ? options_.format : format_from_extension(path);
    if (!format) {
      return fail(ErrorKind::kConfig, fmt::format("File source '{}': cannot tell the format of {} from its name; set "
                                                  "format: jsonl, csv or parquet",
                                                  options_.name, path.string()));
    }
    auto file = std::make_unique<OpenFile>();
    file->where = where;
    file->path = path;
    file->format = *format;
    if (*format == FileFormat::kParquet) {
      auto reader = ParquetReader::open(path, where.offset);
      if (!reader) return std::unexpected(reader.error());
      file->parquet = std::move(*reader);
    } else {
      auto stream = open_byte_stream(path, options_.compression.value_or(compression_from_extension(path)));
      if (!stream) return std::unexpected(stream.error());
      file->buffer = std::make_unique<RecordBuffer>(std::move(*stream));
      if (*format == FileFormat::kCsv) {
        file->csv = std::make_unique<CsvReader>(options_.csv);
        SKIPPR_TRY(file->csv->read_header(*file->buffer, path.string()));
      }
      // Compressed input cannot seek: the stream is decompressed from the start and skipped up to the offset.
      const uint64_t skip = where.offset > file->buffer->offset() ? where.offset - file->buffer->offset() : 0;
      SKIPPR_TRY(file->buffer->skip(skip));
      if (where.offset > 0 && file->buffer->next_line() != where.line) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("File source '{}': {} has different content before the saved position (line {} "
                                "expected at byte {}, found line {}); it changed after it was partly read",
                                options_.name, path.string(), where.line, where.offset, file->buffer->next_line()));
      }
    }
    if (where.offset == 0) spdlog::debug("File source '{}': reading {}", options_.name, path.string());
    current_ = std::move(file);
    return true;
  }

  // A compressed file that is damaged or cut short: what could be read of it is kept (the rows before the damage are
  // in this poll), the rest becomes one dead letter naming the decompressed byte offset, and the next file is read.
  // Every run decides the same, so the file is never stuck: it is done once this poll's batch is committed.
  bool skip_damaged_rest(const Error& error, std::vector<DeadLetter>& dead) {
    if (!current_ || !current_->buffer || !current_->buffer->damaged_at() || error.kind != ErrorKind::kBadInput) {
      return false;
    }
    const RecordBuffer& buffer = *current_->buffer;
    const uint64_t at = *buffer.damaged_at();
    dead.push_back({current_->path.string(), buffer.next_line(),
                    fmt::format("{}; the file is readable up to byte {} of its decompressed content: the records "
                                "before it were read, the rest of the file is skipped",
                                error.message, at),
                    std::string(buffer.unread_tail())});
    spdlog::warn(
        "File source '{}': {} is damaged at decompressed byte {}; its readable part is read, the rest goes "
        "to the dead letters ({})",
        options_.name, current_->path.string(), at, error.message);
    done_.insert(current_->where.name);
    current_.reset();
    return true;
  }

  // true when the current file is finished.
  Result<bool> read_some(std::vector<DeadLetter>& dead, const ReadLimits& limits, ReadProgress& progress) {
    OpenFile& f = *current_;
    switch (f.format) {
      case FileFormat::kJsonl:
        return jsonl_.read(*f.buffer, rows_, dead, limits, progress, f.path.string());
      case FileFormat::kCsv:
        return f.csv->read(*f.buffer, rows_, dead, limits, progress, f.path.string());
      case FileFormat::kParquet:
        return f.parquet->read(rows_, limits, progress);
    }
    return true;
  }

  FileSourceOptions options_;
  std::set<std::string> done_;
  std::optional<CurrentFile> resume_;
  std::unique_ptr<OpenFile> current_;
  RowBuilder rows_;
  JsonlReader jsonl_;
};

Result<CsvOptions> csv_options(const std::string& source, const nlohmann::json& map) {
  CsvOptions o;
  auto one_char = [&](const std::string& key, const std::string& v) -> Result<char> {
    if (v == "tab" || v == "\\t") return '\t';
    if (v.size() != 1) {
      return fail(ErrorKind::kConfig, fmt::format("File source '{}': csv.{} must be one character (or 'tab'), got "
                                                  "'{}'",
                                                  source, key, v));
    }
    return v[0];
  };
  if (!map.is_object()) return o;
  for (const auto& [key, value] : map.items()) {
    const std::string v = value.get<std::string>();
    if (key == "delimiter") {
      auto c = one_char(key, v);
      if (!c) return std::unexpected(c.error());
      o.delimiter = *c;
    } else if (key == "quote") {
      auto c = one_char(key, v);
      if (!c) return std::unexpected(c.error());
      o.quote = *c;
    } else if (key == "header") {
      if (v != "true" && v != "false") {
        return fail(ErrorKind::kConfig,
                    fmt::format("File source '{}': csv.header must be true or false, got '{}'", source, v));
      }
      o.header = v == "true";
    } else if (key == "null_string") {
      o.null_string = v;
    } else {
      return fail(ErrorKind::kConfig, fmt::format("File source '{}': unknown csv option '{}'; the options are "
                                                  "delimiter, quote, header and null_string",
                                                  source, key));
    }
  }
  if (o.delimiter == o.quote) {
    return fail(ErrorKind::kConfig,
                fmt::format("File source '{}': csv.delimiter and csv.quote are both '{}'", source, o.delimiter));
  }
  return o;
}

}  // namespace

ConnectorSpec file_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "File";
  spec.is_source = true;
  spec.summary = "local JSON lines, CSV or Parquet files (glob, gzip/zstd, new files picked up)";
  spec.params = {
      {"path", ParamType::kPath, true, nullptr,
       "a file or a glob such as in/**/*.jsonl.gz (relative to skippr.yml's folder); files are read in sorted order"},
      {"format", ParamType::kString, false, nullptr, "jsonl, csv or parquet; from each file's extension when absent"},
      {"compression", ParamType::kString, false, "auto", "auto (from the extension: .gz, .zst), gzip, zstd or none"},
      {"csv", ParamType::kStringMap, false, nullptr,
       "delimiter (default ','), quote ('\"'), header (true), null_string (an unquoted field equal to it is NULL; "
       "default the empty field)"},
  };
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    const auto& p = ctx.params;
    FileSourceOptions o;
    o.name = ctx.name;
    o.pattern_text = p.value("path", std::string());
    o.pattern = parse_glob(o.pattern_text);
    if (std::error_code ec; std::filesystem::is_directory(o.pattern_text, ec)) {
      return fail(ErrorKind::kConfig, fmt::format("File source '{}': path '{}' names a folder; add a file pattern "
                                                  "such as {}/*.jsonl",
                                                  ctx.name, o.pattern_text, o.pattern_text));
    }
    if (p.contains("format") && !p["format"].is_null()) {
      const std::string format = p["format"].get<std::string>();
      o.format = format_from_string(format);
      if (!o.format) {
        return fail(ErrorKind::kConfig,
                    fmt::format("File source '{}': format '{}' is not jsonl, csv or parquet", ctx.name, format));
      }
    }
    const std::string compression = p.value("compression", std::string("auto"));
    if (compression != "auto") {
      o.compression = compression_from_string(compression);
      if (!o.compression) {
        return fail(ErrorKind::kConfig, fmt::format("File source '{}': compression '{}' is not auto, gzip, zstd or "
                                                    "none",
                                                    ctx.name, compression));
      }
    }
    auto csv = csv_options(ctx.name, p.value("csv", nlohmann::json::object()));
    if (!csv) return std::unexpected(csv.error());
    o.csv = std::move(*csv);
    return std::make_unique<FileSource>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
