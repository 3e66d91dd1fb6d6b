#include "sources/file/file_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <deque>
#include <map>
#include <optional>

#include "formats/compression.h"
#include "formats/csv_reader.h"
#include "formats/jsonl_reader.h"
#include "formats/parquet_reader.h"
#include "formats/record_buffer.h"
#include "sources/file/file_position.h"
#include "sources/file/file_store.h"
#include "sources/file/file_stores.h"
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

struct FileSourceOptions {
  std::string name;  // the source's name in skippr.yml
  GlobPattern pattern;
  std::string pattern_text;
  bool remote = false;
  // With {stream} in the path: which segment below the pattern's base names each file's stream.
  std::optional<size_t> stream_segment;
  std::optional<FileFormat> format;        // nullopt: from each file's extension
  std::optional<Compression> compression;  // nullopt (auto): from each file's extension
  CsvOptions csv;
};

// One file being read: its reader for the format, and where it is.
struct OpenFile {
  CurrentFile where;
  std::string display;  // its path or URL, for messages and dead letters
  FileFormat format = FileFormat::kJsonl;
  std::unique_ptr<RecordBuffer> buffer;  // jsonl, csv
  std::unique_ptr<CsvReader> csv;
  std::unique_ptr<ParquetReader> parquet;
};

class FileSource final : public Source {
 public:
  FileSource(FileSourceOptions options, std::unique_ptr<FileStore> store)
      : options_(std::move(options)), store_(std::move(store)) {}

  Status open() override {
    SKIPPR_TRY(store_->open());
    // A folder that is not there is a typo or a share that is not mounted, not "no files yet": reading nothing
    // from it would look like an empty source, and a replace_table landing would empty its table.
    std::error_code ec;
    if (!options_.remote && !std::filesystem::is_directory(options_.pattern.base, ec)) {
      return fail(ErrorKind::kConfig,
                  fmt::format("File source '{}': the folder {} of path {} does not exist; fix path, or create the "
                              "folder (or mount the share it is on) and run again",
                              options_.name, options_.pattern.base.string(), options_.pattern_text));
    }
    return ok();
  }

  // Its positions name data that can be read again from there, whoever committed them.
  bool resumes_from_destination() const override { return true; }
  bool names_streams() const override { return options_.stream_segment.has_value(); }
  Status seek(const Position& position) override {
    current_.reset();
    store_->release();
    done_.clear();
    done_versions_.clear();
    pending_.clear();
    resume_.reset();
    rows_.clear();
    if (position.empty()) return ok();
    auto decoded = decode_file_position(position);
    if (!decoded) {
      return fail(ErrorKind::kCorruption,
                  fmt::format("File source '{}': unreadable resume position '{}'", options_.name, position.token));
    }
    done_ = std::move(decoded->done);
    done_versions_ = std::move(decoded->done_versions);
    resume_ = std::move(decoded->current);
    for (auto& [stream, types] : decoded->types) rows_[stream].restore_types(std::move(types));
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
      // Each bad record is counted under its file's stream (a poll reads several).
      const std::string stream = stream_of(current_->where.name);
      const size_t dead_before = out.dead_letters.size();
      auto finished = read_some(out.dead_letters, limits, progress);
      const bool skipped = !finished && skip_damaged_rest(finished.error(), out.dead_letters);
      for (size_t i = dead_before; i < out.dead_letters.size(); ++i) out.dead_letters[i].stream = stream;
      if (skipped) continue;
      if (!finished) return std::unexpected(finished.error());
      if (*finished) {
        finish_current();
      } else {
        current_->where.offset = current_->parquet ? current_->parquet->next_row() : current_->buffer->offset();
        current_->where.line = current_->parquet ? current_->parquet->next_row() + 1 : current_->buffer->next_line();
      }
    }
    FilePosition p{done_, done_versions_, std::nullopt, {}};
    for (auto& [stream, rows] : rows_) {
      p.types[stream] = rows.types();
      if (rows.empty()) continue;
      Batch records = rows.take();
      records.stream = stream;
      if (out.records.rows == 0) {
        out.records = std::move(records);
      } else {
        out.other_streams.push_back(std::move(records));
      }
    }
    if (current_) p.current = current_->where;
    out.position_after = encode_file_position(p);
    // Files of the last listing not read to their end, the one being read included. A file that arrives later
    // counts from the listing after the current one is used up (listing is once per pass).
    out.backlog = pending_.size() + (current_ || resume_ ? 1u : 0u);
    return out;
  }

 private:
  // Opens the file to resume, else the next matching file not read yet. false: nothing to read right now.
  // The store is listed again only when the files of the last listing are used up: once per pass, not per file.
  Result<bool> open_next() {
    if (resume_) {
      CurrentFile where = *resume_;
      resume_.reset();
      return open_file(where);
    }
    if (pending_.empty()) {
      auto files = store_->list();
      if (!files) return std::unexpected(files.error());
      for (auto& file : *files) {
        if (!done_.contains(file.name)) {
          pending_.push_back(std::move(file));
        } else if (store_->versions_are_content()) {
          SKIPPR_TRY(check_not_replaced(file));
        }
      }
    }
    if (pending_.empty()) return false;
    StoredFile next = std::move(pending_.front());
    pending_.pop_front();
    return open_file(CurrentFile{std::move(next.name), 0, 1, std::move(next.identity)});
  }

  // An object read to its end and then replaced under the same key: its new content would be skipped without a
  // word, so it is an error naming it instead.
  Status check_not_replaced(const StoredFile& file) const {
    auto read = done_versions_.find(file.name);
    if (read == done_versions_.end() || read->second == file.identity.version) return ok();
    return fail(ErrorKind::kBadInput,
                fmt::format("File source '{}': {} was replaced after it was read (version {} was read, {} is there "
                            "now); its new content is never read silently. Write new data under new names, or "
                            "RESET PIPELINE to read every object again",
                            options_.name, store_->display(file.name), read->second, file.identity.version));
  }

  // `fetch_races_left`: how often an object that changes between its identity check and its download is looked at
  // again before that is an error.
  Result<bool> open_file(const CurrentFile& where_listed, int fetch_races_left = 2) {
    CurrentFile where = where_listed;
    const std::string display = store_->display(where.name);
    auto now = store_->identity(where.name);
    if (!now) return std::unexpected(now.error());
    const bool started = where.offset > 0;
    if (!*now && !started) return open_next();  // listed, then gone before reading began: nothing of it was read
    if (!*now) {
      return fail(ErrorKind::kBadInput, fmt::format("File source '{}': {} is gone after it was partly read; put it "
                                                    "back, or RESET PIPELINE to read every file again",
                                                    options_.name, display));
    }
    if (started && **now != where.identity) {
      return fail(ErrorKind::kBadInput,
                  fmt::format("File source '{}': {} changed after it was partly read (size {} -> {} bytes, {} "
                              "changed); a changed file is never re-read silently. Put the original back, or "
                              "RESET PIPELINE to read every file again",
                              options_.name, display, where.identity.size, (*now)->size,
                              where.identity.version.empty() ? "mtime" : "version"));
    }
    if (!started) where.identity = std::move(**now);  // still being written when listed: read what is there now
    auto format = options_.format ? options_.format : format_from_extension(where.name);
    if (!format) {
      return fail(ErrorKind::kConfig, fmt::format("File source '{}': cannot tell the format of {} from its name; set "
                                                  "format: jsonl, csv or parquet",
                                                  options_.name, display));
    }
    auto path = store_->fetch(where.name, where.identity);
    if (!path && path.error().kind == ErrorKind::kBadInput && !started && fetch_races_left > 0) {
      // Replaced or deleted between its HEAD and its GET, before any of it was read: look again.
      return open_file(where_listed, fetch_races_left - 1);
    }
    if (!path) {
      if (path.error().kind != ErrorKind::kBadInput) return std::unexpected(path.error());
      return fail(ErrorKind::kBadInput, fmt::format("{}; it is never read in a version other than the one listed. "
                                                    "RESET PIPELINE to read every file again",
                                                    path.error().message));
    }
    auto file = std::make_unique<OpenFile>();
    file->where = where;
    file->display = display;
    file->format = *format;
    if (*format == FileFormat::kParquet) {
      auto reader = ParquetReader::open(*path, where.offset);
      if (!reader) return std::unexpected(reader.error());
      file->parquet = std::move(*reader);
    } else {
      auto stream = open_byte_stream(*path, options_.compression.value_or(compression_from_extension(where.name)));
      if (!stream) return std::unexpected(stream.error());
      file->buffer = std::make_unique<RecordBuffer>(std::move(*stream));
      if (*format == FileFormat::kCsv) {
        file->csv = std::make_unique<CsvReader>(options_.csv);
        SKIPPR_TRY(file->csv->read_header(*file->buffer, display));
      }
      // Compressed input cannot seek: the stream is decompressed from the start and skipped up to the offset.
      const uint64_t skip = where.offset > file->buffer->offset() ? where.offset - file->buffer->offset() : 0;
      SKIPPR_TRY(file->buffer->skip(skip));
      if (where.offset > 0 && file->buffer->next_line() != where.line) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("File source '{}': {} has different content before the saved position (line {} "
                                "expected at byte {}, found line {}); it changed after it was partly read",
                                options_.name, display, where.line, where.offset, file->buffer->next_line()));
      }
    }
    if (where.offset == 0) spdlog::debug("File source '{}': reading {}", options_.name, display);
    current_ = std::move(file);
    return true;
  }

  void finish_current() {
    done_.insert(current_->where.name);
    if (store_->versions_are_content()) done_versions_[current_->where.name] = current_->where.identity.version;
    current_.reset();
    store_->release();
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
    dead.push_back({current_->display, buffer.next_line(),
                    fmt::format("{}; the file is readable up to byte {} of its decompressed content: the records "
                                "before it were read, the rest of the file is skipped",
                                error.message, at),
                    std::string(buffer.unread_tail())});
    spdlog::warn(
        "File source '{}': {} is damaged at decompressed byte {}; its readable part is read, the rest goes "
        "to the dead letters ({})",
        options_.name, current_->display, at, error.message);
    finish_current();
    return true;
  }

  // The stream a file belongs to: the segment of its name {stream} stood for ("" without {stream}).
  std::string stream_of(const std::string& name) const {
    if (!options_.stream_segment) return {};
    size_t begin = 0;
    for (size_t i = 0; i < *options_.stream_segment; ++i) begin = name.find('/', begin) + 1;
    return name.substr(begin, name.find('/', begin) - begin);
  }

  // true when the current file is finished.
  Result<bool> read_some(std::vector<DeadLetter>& dead, const ReadLimits& limits, ReadProgress& progress) {
    OpenFile& f = *current_;
    RowBuilder& rows = rows_[stream_of(f.where.name)];
    switch (f.format) {
      case FileFormat::kJsonl:
        return jsonl_.read(*f.buffer, rows, dead, limits, progress, f.display);
      case FileFormat::kCsv:
        return f.csv->read(*f.buffer, rows, dead, limits, progress, f.display);
      case FileFormat::kParquet:
        return f.parquet->read(rows, limits, progress);
    }
    return true;
  }

  FileSourceOptions options_;
  std::unique_ptr<FileStore> store_;
  std::set<std::string> done_;
  std::map<std::string, std::string, std::less<>> done_versions_;
  std::deque<StoredFile> pending_;  // listed, not read yet
  std::optional<CurrentFile> resume_;
  std::unique_ptr<OpenFile> current_;
  std::map<std::string, RowBuilder> rows_;  // per stream ("" without {stream})
  JsonlReader jsonl_;
};

// A path with {stream}: the placeholder becomes * in `pattern` (so every folder there matches), and the result is
// the index, below the pattern's base, of the segment that names each file's stream. nullopt without {stream}.
Result<std::optional<size_t>> take_stream_placeholder(const std::string& source, std::string& pattern) {
  constexpr std::string_view kPlaceholder = "{stream}";
  const size_t at = pattern.find(kPlaceholder);
  if (at == std::string::npos) return std::optional<size_t>();
  auto refuse = [&](std::string_view why) {
    return fail(ErrorKind::kConfig, fmt::format("File source '{}': path '{}': {}; write it as a folder of its own, "
                                                "for example in/{{stream}}/*.jsonl",
                                                source, pattern, why));
  };
  if (pattern.find(kPlaceholder, at + 1) != std::string::npos) return refuse("{stream} may appear once");
  const bool whole_segment = (at == 0 || pattern[at - 1] == '/') && at + kPlaceholder.size() < pattern.size() &&
                             pattern[at + kPlaceholder.size()] == '/';
  if (!whole_segment) return refuse("{stream} must be a whole folder name, with the files below it");
  pattern.replace(at, kPlaceholder.size(), "*");
  // Segments as glob.cc splits them: the base is the leading ones without a wildcard.
  size_t index = 0, first_wildcard = std::string::npos, stream_index = 0;
  for (size_t begin = 0; begin <= pattern.size();) {
    size_t end = pattern.find('/', begin);
    if (end == std::string::npos) end = pattern.size();
    if (end > begin) {
      const std::string_view part(pattern.data() + begin, end - begin);
      if (begin == at) stream_index = index;
      if (first_wildcard == std::string::npos && part.find_first_of("*?[") != std::string_view::npos) {
        first_wildcard = index;
      }
      if (part == "**" && begin < at) return refuse("{stream} cannot follow ** (which folder names it would vary)");
      ++index;
    }
    begin = end + 1;
  }
  return std::optional<size_t>(stream_index - first_wildcard);
}

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
  spec.backlog = BacklogUnit{"files", "Files the File source has listed and not read to their end.", "files"};
  spec.is_source = true;
  spec.summary =
      "JSON lines, CSV or Parquet files, local or in S3, Azure Blob, GCS or SFTP (glob, gzip/zstd, new files picked "
      "up)";
  spec.params = {
      {"path", ParamType::kPath, true, nullptr,
       "a file or a glob such as in/**/*.jsonl.gz (relative to skippr.yml's folder), or the same in a bucket: "
       "s3://bucket/in/*.jsonl.gz, az://container/in/*.jsonl.gz, gs://bucket/in/*.jsonl.gz, "
       "sftp://host/data/in/*.jsonl.gz; files are read in sorted order"},
      {"format", ParamType::kString, false, nullptr, "jsonl, csv or parquet; from each file's extension when absent"},
      {"compression", ParamType::kString, false, "auto", "auto (from the extension: .gz, .zst), gzip, zstd or none"},
      {"csv", ParamType::kStringMap, false, nullptr,
       "delimiter (default ','), quote ('\"'), header (true), null_string (an unquoted field equal to it is NULL; "
       "default the empty field)"},
  };
  for (auto& param : file_store_params()) spec.params.push_back(std::move(param));
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    const auto& p = ctx.params;
    FileSourceOptions o;
    o.name = ctx.name;
    o.pattern_text = p.value("path", std::string());
    auto stream_segment = take_stream_placeholder(ctx.name, o.pattern_text);
    if (!stream_segment) return std::unexpected(stream_segment.error());
    o.stream_segment = *stream_segment;
    o.remote = is_remote_path(o.pattern_text);
    if (!o.remote) o.pattern = parse_glob(o.pattern_text);
    if (std::error_code ec; !o.remote && std::filesystem::is_directory(o.pattern_text, ec)) {
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
    std::unique_ptr<FileStore> store = local_file_store(o.pattern);
    if (o.remote) {
      const auto cache = ctx.pipeline_dir.empty() ? std::filesystem::temp_directory_path() / "skippr-file-cache"
                                                  : ctx.pipeline_dir / "file-cache";
      auto remote = remote_file_store(o.pattern_text, p, cache, fmt::format("File source '{}'", ctx.name));
      if (!remote) return std::unexpected(remote.error());
      store = std::move(*remote);
    }
    return std::make_unique<FileSource>(std::move(o), std::move(store));
  };
  return spec;
}

}  // namespace skippr
