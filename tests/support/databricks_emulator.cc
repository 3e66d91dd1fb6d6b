#include "support/databricks_emulator.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>

#include "support/emulator_common.h"
#include "support/process.h"

namespace skippr::test {
namespace {
// The patterns below are never destroyed: an execution outlives the request that started it, and one still running
// when the test binary exits must not meet a pattern the exit has already destroyed.

namespace fs = std::filesystem;

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

// The rewrites of Databricks' words into DuckDB's, outside literals and names.
std::string rewrite_text(std::string text) {
  static const auto& kRewrites = *new std::vector<std::pair<std::regex, std::string>>{
      {std::regex(R"(\bTIMESTAMP_NTZ\b)", std::regex::icase), "TS__NTZ"},
      {std::regex(R"(\bTIMESTAMP\b)", std::regex::icase), "TIMESTAMPTZ"},  // Databricks' TIMESTAMP is an instant
      {std::regex(R"(\bTS__NTZ\b)"), "TIMESTAMP"},
      {std::regex(R"(\bSTRING\b)", std::regex::icase), "VARCHAR"},
      {std::regex(R"(\bBINARY\b)", std::regex::icase), "BLOB"},
      {std::regex(R"(\bunbase64\s*\()", std::regex::icase), "from_base64("},
      {std::regex(R"(\bcurrent_timestamp\(\))", std::regex::icase), "current_timestamp"},
      {std::regex(R"(\*\s*EXCEPT\s*\()", std::regex::icase), "* EXCLUDE ("},
  };
  if (std::none_of(text.begin(), text.end(), [](unsigned char c) { return std::isalpha(c); })) return text;
  for (const auto& [pattern, replacement] : kRewrites) text = std::regex_replace(text, pattern, replacement);
  return text;
}

// read_ndjson of a batch file with every key of its first line as text: what primitivesAsString reads.
std::string read_as_text(const fs::path& local, const std::string& shown) {
  std::ifstream in(local);
  std::string first;
  if (!in || !std::getline(in, first)) {
    throw std::runtime_error(fmt::format("[PATH_NOT_FOUND] Path does not exist: {}", shown));
  }
  const auto row = nlohmann::ordered_json::parse(first, nullptr, false);
  if (!row.is_object()) throw std::runtime_error(fmt::format("[MALFORMED_RECORD_IN_PARSING] in {}", shown));
  std::string columns;
  for (const auto& [key, value] : row.items()) {
    columns += fmt::format("{}{}: 'VARCHAR'", columns.empty() ? "" : ", ", duckdb_quoted(key, '\''));
  }
  return fmt::format("read_ndjson({}, columns = {{{}}})", duckdb_quoted(local.string(), '\''), columns);
}

}  // namespace

std::string databricks_to_duckdb_sql(const std::string& raw, const std::function<fs::path(const std::string&)>& local) {
  // Statement-level shapes DuckDB spells otherwise: table properties (Delta's) dropped, ADD COLUMNS of one column.
  static const std::regex& kProperties = *new std::regex(R"(\s*TBLPROPERTIES\s*\(.*\)\s*$)", std::regex::icase);
  static const std::regex& kAddColumns = *new std::regex(R"(\bADD\s+COLUMNS\s*\((.*)\)\s*$)", std::regex::icase);
  std::string sql = std::regex_replace(raw, kProperties, "");
  sql = std::regex_replace(sql, kAddColumns, "ADD COLUMN $1");
  static const std::regex& kReadFilesOpen = *new std::regex(R"(\bread_files\s*\(\s*$)", std::regex::icase);
  std::string out;
  const auto pieces = sql_pieces(sql);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const SqlPiece& p = pieces[i];
    if (p.kind == SqlPiece::kLiteral) {
      out += duckdb_quoted(p.text, '\'');
    } else if (p.kind == SqlPiece::kQuoted || p.kind == SqlPiece::kBackticked) {
      // `catalog`.information_schema.columns: the view with Databricks' type names.
      const bool before_catalog = i + 1 < pieces.size() && pieces[i + 1].kind == SqlPiece::kText &&
                                  pieces[i + 1].text.starts_with(".information_schema.columns");
      if (before_catalog) {
        ++i;
        out += "dbx_information_schema_columns" +
               rewrite_text(pieces[i].text.substr(std::string(".information_schema.columns").size()));
      } else {
        out += duckdb_quoted(p.text, '"');
      }
    } else {
      std::string text = rewrite_text(p.text);
      std::smatch m;
      if (i + 1 < pieces.size() && pieces[i + 1].kind == SqlPiece::kLiteral &&
          std::regex_search(text, m, kReadFilesOpen)) {
        // read_files('<file>', format => 'json', primitivesAsString => true): its options up to the first ')'.
        out += text.substr(0, m.position(0)) + read_as_text(local(pieces[i + 1].text), pieces[i + 1].text);
        i += 2;
        while (i < pieces.size() &&
               (pieces[i].kind != SqlPiece::kText || pieces[i].text.find(')') == std::string::npos)) {
          ++i;
        }
        if (i >= pieces.size()) throw std::runtime_error("[PARSE_SYNTAX_ERROR] read_files is not closed");
        const std::string rest = pieces[i].text.substr(pieces[i].text.find(')') + 1);
        // The next piece's text goes through the loop again as a text piece of its own.
        out += rewrite_text(rest);
        continue;
      }
      out += text;
    }
  }
  return out;
}

namespace {

// One statement's execution: it runs on a thread of its own, on a DuckDB session of its own, and outlives the HTTP
// request (and the client) that submitted it, as a warehouse's statements do.
struct DbxExecution {
  std::string id;
  std::string statement;
  std::string state = "PENDING";  // then RUNNING, then SUCCEEDED or FAILED
  std::string answer;             // the final StatementResponse, once it ended
  bool ended() const { return state == "SUCCEEDED" || state == "FAILED"; }
};

// wait_timeout as the API takes it: "0s" (answer at once) or 5 to 50 seconds.
std::optional<int> wait_seconds(const std::string& text) {
  static const std::regex& kWait = *new std::regex(R"(^([0-9]{1,2})s$)");
  std::smatch m;
  if (!std::regex_match(text, m, kWait)) return std::nullopt;
  const int seconds = std::stoi(m[1]);
  if (seconds != 0 && (seconds < 5 || seconds > 50)) return std::nullopt;
  return seconds;
}

}  // namespace

struct DatabricksEmulator::Impl {
  httplib::Server server;
  EmulatorDb db;
  std::mutex mutex;  // the emulator's own state below (statements run on sessions of their own)
  std::condition_variable ended;
  TempDir files;                  // the volumes' bytes, under Volumes/<catalog>/<schema>/<volume>/
  std::set<std::string> loaded;   // table|file pairs whose COPY INTO committed: the tables' load history
  std::set<std::string> copying;  // table|file pairs a COPY INTO still running is loading
  std::vector<std::pair<std::string, std::string>> loads;
  int skipped = 0;
  std::vector<DatabricksUploadSeen> uploads;
  std::vector<DatabricksStatementSeen> statements;
  std::map<std::string, std::shared_ptr<DbxExecution>> by_id;
  std::atomic<bool> pending{false};
  int next_id = 1;
  int duplicated_copy_failures = 0;  // COPY INTOs still to refuse as overlapping a concurrent one
  std::string slow_text;             // statements containing it (upper-case) run `slow_delay` later
  std::chrono::milliseconds slow_delay{0};
  Executions executions;  // last: waited for before anything above goes

  using Outcome = EmulatorDb::Outcome;

  fs::path local(const std::string& path) const { return files.path() / path.substr(1); }
  static std::string volume_root() { return fmt::format("/Volumes/{}/{}/{}/", kCatalog, kSchema, kVolume); }

  static void error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
    res.status = status;
    res.set_content(nlohmann::json{{"error_code", code}, {"message", message}}.dump(), "application/json");
  }

  bool authorized(const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") == std::string("Bearer ") + kToken) return true;
    error(res, 401, "UNAUTHENTICATED", "Invalid access token.");
    return false;
  }

  static Outcome duplicated_files() {
    return {false,
            "[COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED] Duplicated files were committed in a concurrent COPY INTO "
            "operation. Please try again later. SQLSTATE: 25000",
            {},
            {}};
  }

  // The delay a statement starting now waits (the slow fault as it is when the statement starts).
  std::chrono::milliseconds delay_for(const std::string& sql) {
    std::lock_guard lock(mutex);
    if (slow_delay.count() == 0 || upper(sql).find(slow_text) == std::string::npos) return {};
    return slow_delay;
  }

  // Takes the files of a COPY INTO: those in the table's load history are skipped, one a running COPY INTO is loading
  // fails the statement (Databricks' answer to overlapping COPY INTOs), the rest are this COPY INTO's until it ends.
  Outcome claim(const std::vector<std::string>& keys, std::vector<std::string>& claimed) {
    std::lock_guard lock(mutex);
    for (const auto& key : keys) {
      if (copying.contains(key)) return duplicated_files();
    }
    for (const auto& key : keys) {
      if (loaded.contains(key)) {
        ++skipped;  // loaded before: COPY INTO skips it
      } else if (std::find(claimed.begin(), claimed.end(), key) == claimed.end()) {
        claimed.push_back(key);
      }
    }
    copying.insert(claimed.begin(), claimed.end());
    return {};
  }

  // Ends a COPY INTO: what it loaded joins the load history only when it committed.
  void release(const std::vector<std::string>& claimed, bool committed) {
    std::lock_guard lock(mutex);
    for (const auto& key : claimed) {
      copying.erase(key);
      if (!committed) continue;
      loaded.insert(key);
      const size_t bar = key.find('|');
      loads.emplace_back(key.substr(bar + 1), key.substr(0, bar));
    }
  }

  // Loads the claimed files (table|file keys) in one transaction: all of them or none.
  Outcome load(EmulatorDb::Session& session, const std::vector<std::string>& claimed, const std::string& select) {
    int64_t inserted = 0;
    session.run("BEGIN TRANSACTION");
    for (const auto& key : claimed) {
      const size_t bar = key.find('|');
      const std::string table = key.substr(0, bar), file = key.substr(bar + 1);
      Outcome done;
      try {
        done = session.run(
            fmt::format("INSERT INTO {} BY NAME SELECT {} FROM {}", table, select, read_as_text(local(file), file)));
      } catch (const std::exception& e) {
        done = {false, e.what(), {}, {}};
      }
      if (!done.ok) {
        session.run("ROLLBACK");
        return done;
      }
      inserted += done.rows.empty() ? 0 : std::stoll(done.rows[0][0].get<std::string>());
    }
    if (auto committed = session.run("COMMIT"); !committed.ok) return committed;
    Outcome out;
    out.names = {"num_affected_rows", "num_inserted_rows"};
    out.rows = {{std::to_string(inserted), std::to_string(inserted)}};
    return out;
  }

  // COPY INTO <table> FROM (SELECT <list> FROM '<folder>') FILEFORMAT = JSON FILES = (...) FORMAT_OPTIONS (...).
  // A slow one holds its files for `delay` before it loads them: a COPY INTO still running at the warehouse.
  Outcome copy_into(EmulatorDb::Session& session, const std::string& sql, std::chrono::milliseconds delay) {
    static const std::regex& kCopy = *new std::regex(
        R"(^\s*COPY\s+INTO\s+(.+?)\s+FROM\s+\(SELECT\s+(.*)\s+FROM\s+'([^']*)'\)\s+FILEFORMAT\s*=\s*JSON\s+FILES\s*=\s*\((.*?)\)\s*(.*)$)",
        std::regex::icase);
    std::smatch m;
    if (!std::regex_match(sql, m, kCopy)) {
      return {false,
              "[PARSE_SYNTAX_ERROR] the emulator takes COPY INTO ... FROM (SELECT ... FROM '<path>') "
              "FILEFORMAT = JSON FILES = (...)",
              {},
              {}};
    }
    const std::string options = m[5];
    if (options.find("'primitivesAsString' = 'true'") == std::string::npos) {
      return {false, "the emulator reads JSON with primitivesAsString only", {}, {}};
    }
    auto to_duck = [this](const std::string& text) {
      return databricks_to_duckdb_sql(text, [this](const std::string& p) { return local(p); });
    };
    const std::string table = to_duck(m[1]);
    const std::string folder = m[3];
    const std::string names = m[4];
    std::vector<std::string> keys;
    static const std::regex& kName = *new std::regex(R"('([^']*)')");
    for (auto it = std::sregex_iterator(names.begin(), names.end(), kName); it != std::sregex_iterator(); ++it) {
      keys.push_back(table + "|" + folder + "/" + (*it)[1].str());
    }
    const std::string select = to_duck(m[2]);  // before the delay: a test may be ending meanwhile
    std::vector<std::string> claimed;
    if (auto taken = claim(keys, claimed); !taken.ok) return taken;
    std::this_thread::sleep_for(delay);
    Outcome out = load(session, claimed, select);
    release(claimed, out.ok);
    return out;
  }

  static nlohmann::json failed(const std::string& id, const std::string& message, const std::string& sql_state) {
    return {{"statement_id", id},
            {"status",
             {{"state", "FAILED"},
              {"error", {{"error_code", "BAD_REQUEST"}, {"message", message}}},
              {"sql_state", sql_state}}}};
  }

  static nlohmann::json succeeded(const std::string& id, const Outcome& outcome) {
    nlohmann::json columns = nlohmann::json::array();
    for (size_t c = 0; c < outcome.names.size(); ++c) {
      columns.push_back(
          {{"name", outcome.names[c]}, {"position", c}, {"type_name", "STRING"}, {"type_text", "STRING"}});
    }
    const size_t rows = outcome.rows.size();
    return {{"statement_id", id},
            {"status", {{"state", "SUCCEEDED"}}},
            {"manifest",
             {{"format", "JSON_ARRAY"},
              {"schema", {{"column_count", outcome.names.size()}, {"columns", columns}}},
              {"total_chunk_count", 1},
              {"chunks", {{{"chunk_index", 0}, {"row_offset", 0}, {"row_count", rows}}}},
              {"total_row_count", rows},
              {"truncated", false}}},
            {"result", {{"chunk_index", 0}, {"row_offset", 0}, {"row_count", rows}, {"data_array", outcome.rows}}}};
  }

  // The fault that refuses the next COPY INTOs as overlapping a concurrent one; true when it takes this one.
  bool refused_as_duplicated() {
    std::lock_guard lock(mutex);
    if (duplicated_copy_failures == 0) return false;
    --duplicated_copy_failures;
    return true;
  }

  // Any other statement, translated before its delay: the translation's static tables may be gone once the test
  // process is exiting, while a slow statement still waits (the emulator's destructor waits for it).
  Outcome run_translated(EmulatorDb::Session& session, const std::string& sql, std::chrono::milliseconds delay) {
    std::string duck_sql;
    try {
      duck_sql = databricks_to_duckdb_sql(sql, [this](const std::string& p) { return local(p); });
    } catch (const std::exception& e) {
      return {false, e.what(), {}, {}};
    }
    std::this_thread::sleep_for(delay);
    return session.run(duck_sql);
  }

  // Runs a statement on a session of its own; the StatementResponse it ends with.
  nlohmann::json execute(const nlohmann::json& body, const std::string& id) {
    const std::string catalog = body.value("catalog", "");
    const std::string schema = body.value("schema", "");
    if (!catalog.empty() && catalog != kCatalog) {
      return failed(id, fmt::format("[NO_SUCH_CATALOG_EXCEPTION] Catalog '{}' was not found.", catalog), "42704");
    }
    if (!schema.empty() && schema != kSchema) {
      return failed(id, fmt::format("[SCHEMA_NOT_FOUND] The schema `{}`.`{}` cannot be found.", kCatalog, schema),
                    "42704");
    }
    const std::string sql = body.value("statement", "");
    static const std::regex& kIsCopy = *new std::regex(R"(^\s*COPY\s+INTO\b)", std::regex::icase);
    const bool copy = std::regex_search(sql, kIsCopy);
    if (copy && refused_as_duplicated()) return failed(id, duplicated_files().error, "25000");
    const auto delay = delay_for(sql);
    EmulatorDb::Session session(db);
    Outcome outcome;
    if (copy) {
      outcome = copy_into(session, sql, delay);
      if (!outcome.ok && outcome.error.find("COPY_INTO_DUPLICATED_FILES") != std::string::npos) {
        return failed(id, outcome.error, "25000");
      }
    } else {
      outcome = run_translated(session, sql, delay);
    }
    return outcome.ok ? succeeded(id, outcome) : failed(id, outcome.error, "42000");
  }

  // The execution's thread: RUNNING, then its final answer.
  void run(const std::shared_ptr<DbxExecution>& execution, const nlohmann::json& body) {
    {
      std::lock_guard lock(mutex);
      execution->state = "RUNNING";
    }
    const nlohmann::json answer = execute(body, execution->id);
    std::lock_guard lock(mutex);
    execution->answer = answer.dump();
    execution->state = answer["status"]["state"];
    ended.notify_all();
  }

  // The StatementResponse as the statement is now: its final one, or its id and state while it runs.
  static std::string current(const DbxExecution& e) {
    if (e.ended()) return e.answer;
    return nlohmann::json{{"statement_id", e.id}, {"status", {{"state", e.state}}}}.dump();
  }

  void post_statement(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("statement") || !body.contains("warehouse_id")) {
      return error(res, 400, "INVALID_PARAMETER_VALUE", "statement and warehouse_id are required");
    }
    if (body.value("warehouse_id", "") != kWarehouse) {
      return error(res, 404, "NOT_FOUND",
                   fmt::format("SQL warehouse {} does not exist.", body.value("warehouse_id", "")));
    }
    const auto wait = wait_seconds(body.value("wait_timeout", "10s"));
    if (!wait) {
      return error(res, 400, "INVALID_PARAMETER_VALUE", "wait_timeout must be 0s or between 5s and 50s");
    }
    std::unique_lock lock(mutex);
    statements.push_back({body.value("statement", ""), req.body});
    auto execution = std::make_shared<DbxExecution>();
    execution->id = fmt::format("01ef{:04x}-0000-1000-8000-{:012x}", next_id / 65536, next_id);
    execution->statement = body.value("statement", "");
    ++next_id;
    by_id[execution->id] = execution;
    executions.start([this, execution, body] { run(execution, body); });
    // Answered when the statement ends within wait_timeout; otherwise (0s: at once) with its id and state, the
    // statement running on (on_wait_timeout CONTINUE).
    if (!pending) ended.wait_for(lock, std::chrono::seconds(*wait), [&] { return execution->ended(); });
    res.status = 200;
    res.set_content(pending ? nlohmann::json{{"statement_id", execution->id}, {"status", {{"state", "PENDING"}}}}.dump()
                            : current(*execution),
                    "application/json");
  }

  void get_statement(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    std::lock_guard lock(mutex);
    auto found = by_id.find(req.matches[1]);
    if (found == by_id.end()) return error(res, 404, "NOT_FOUND", "The statement was not found.");
    res.status = 200;
    res.set_content(current(*found->second), "application/json");
  }

  void put_file(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    const std::string path = req.matches[1];
    if (!path.starts_with(volume_root()) || path.find("/../") != std::string::npos) {
      return error(res, 404, "NOT_FOUND", fmt::format("The volume of {} does not exist.", path));
    }
    std::lock_guard lock(mutex);
    const fs::path file = local(path);
    const bool there = fs::exists(file);
    uploads.push_back({path, sha256_hex(req.body), false});
    if (there && req.get_param_value("overwrite") == "false") {
      return error(res, 409, "ALREADY_EXISTS", "The file being created already exists.");
    }
    fs::create_directories(file.parent_path());
    const fs::path part = file.string() + ".part";
    write_text(part, req.body);
    fs::rename(part, file);
    uploads.back().created = true;
    res.status = 204;
  }

  void get_file(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    std::lock_guard lock(mutex);
    const fs::path file = local(req.matches[1]);
    if (!fs::is_regular_file(file)) return error(res, 404, "NOT_FOUND", "The file does not exist.");
    res.status = 200;
    res.set_content(read_text(file), "application/octet-stream");
  }

  void delete_file(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    std::lock_guard lock(mutex);
    const fs::path file = local(req.matches[1]);
    if (!fs::is_regular_file(file)) return error(res, 404, "NOT_FOUND", "The file does not exist.");
    fs::remove(file);
    res.status = 204;
  }

  // Two entries a page (the API may return fewer than page_size), so callers must follow next_page_token.
  void list_directory(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res)) return;
    std::lock_guard lock(mutex);
    std::string path = req.matches[1];
    while (path.size() > 1 && path.ends_with('/')) path.pop_back();
    const fs::path dir = local(path);
    if (!fs::is_directory(dir)) return error(res, 404, "NOT_FOUND", "The directory does not exist.");
    std::vector<fs::directory_entry> entries;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.path().string().ends_with(".part")) entries.push_back(e);
    }
    std::sort(entries.begin(), entries.end());
    const size_t start = req.has_param("page_token") ? std::stoul(req.get_param_value("page_token")) : 0;
    nlohmann::json contents = nlohmann::json::array();
    for (size_t i = start; i < entries.size() && i < start + 2; ++i) {
      const auto& e = entries[i];
      const std::string name = e.path().filename().string();
      nlohmann::json entry = {{"path", path + "/" + name}, {"is_directory", e.is_directory()}, {"name", name}};
      if (!e.is_directory()) entry["file_size"] = e.file_size();
      contents.push_back(entry);
    }
    nlohmann::json answer = {{"contents", contents}};
    if (start + 2 < entries.size()) answer["next_page_token"] = std::to_string(start + 2);
    res.status = 200;
    res.set_content(answer.dump(), "application/json");
  }
};

DatabricksEmulator::DatabricksEmulator() : impl_(std::make_unique<Impl>()) {
  auto must = [&](const std::string& sql) { impl_->db.must(sql); };
  must(fmt::format("ATTACH ':memory:' AS \"{}\"", kCatalog));
  must(fmt::format("CREATE SCHEMA \"{}\".\"{}\"", kCatalog, kSchema));
  fs::create_directories(impl_->local(Impl::volume_root()));
  // TEMP macros and views belong to a connection: every statement's session makes them again.
  auto each_session = [&](const std::string& sql) { impl_->db.on_each_session(sql); };
  each_session("CREATE TEMP MACRO parse_json(x) AS CAST(x AS JSON)");
  // information_schema.columns with Databricks' type names (full_data_type as Databricks reports it).
  each_session(R"(CREATE TEMP VIEW dbx_information_schema_columns AS SELECT table_catalog, table_schema, table_name,
    column_name, ordinal_position, CASE WHEN data_type = 'VARCHAR' THEN 'string' WHEN data_type = 'BLOB' THEN 'binary'
    WHEN data_type = 'TIMESTAMP WITH TIME ZONE' THEN 'timestamp' WHEN data_type = 'TIMESTAMP' THEN 'timestamp_ntz'
    WHEN data_type = 'INTEGER' THEN 'int' ELSE lower(data_type) END AS full_data_type FROM information_schema.columns)");
  auto& s = impl_->server;
  s.Post("/api/2.0/sql/statements",
         [this](const httplib::Request& req, httplib::Response& res) { impl_->post_statement(req, res); });
  s.Get(R"(/api/2.0/sql/statements/([0-9a-f-]+))",
        [this](const httplib::Request& req, httplib::Response& res) { impl_->get_statement(req, res); });
  s.Post(R"(/api/2.0/sql/statements/([0-9a-f-]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
    if (impl_->authorized(req, res)) res.set_content("{}", "application/json");
  });
  s.Put(R"(/api/2.0/fs/files(/.*))",
        [this](const httplib::Request& req, httplib::Response& res) { impl_->put_file(req, res); });
  s.Get(R"(/api/2.0/fs/files(/.*))",
        [this](const httplib::Request& req, httplib::Response& res) { impl_->get_file(req, res); });
  s.Delete(R"(/api/2.0/fs/files(/.*))",
           [this](const httplib::Request& req, httplib::Response& res) { impl_->delete_file(req, res); });
  s.Get(R"(/api/2.0/fs/directories(/.*))",
        [this](const httplib::Request& req, httplib::Response& res) { impl_->list_directory(req, res); });
  port_ = s.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { impl_->server.listen_after_bind(); });
  while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

DatabricksEmulator::~DatabricksEmulator() {
  impl_->server.stop();
  if (thread_.joinable()) thread_.join();
  impl_->executions.wait_all();
}

void DatabricksEmulator::slow_statements(const std::string& containing, std::chrono::milliseconds delay) {
  std::lock_guard lock(impl_->mutex);
  impl_->slow_text = upper(containing);
  impl_->slow_delay = delay;
}

std::vector<std::string> DatabricksEmulator::running_statements() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& [id, execution] : impl_->by_id) {
    if (!execution->ended()) out.push_back(execution->statement);
  }
  return out;
}

void DatabricksEmulator::fail_copies_as_duplicated(int n) {
  std::lock_guard lock(impl_->mutex);
  impl_->duplicated_copy_failures = n;
}
int DatabricksEmulator::copies_left_to_fail() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->duplicated_copy_failures;
}
void DatabricksEmulator::answer_pending(bool on) { impl_->pending = on; }

std::vector<std::vector<std::string>> DatabricksEmulator::query(const std::string& duckdb_sql) {
  return impl_->db.text_rows(duckdb_sql);
}

std::vector<DatabricksUploadSeen> DatabricksEmulator::uploads() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->uploads;
}

std::vector<DatabricksStatementSeen> DatabricksEmulator::statements() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->statements;
}

std::vector<std::pair<std::string, std::string>> DatabricksEmulator::loads() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->loads;
}

int DatabricksEmulator::skipped_loads() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->skipped;
}

std::vector<std::string> DatabricksEmulator::volume_files() const {
  std::lock_guard lock(impl_->mutex);
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(impl_->files.path())) {
    if (e.is_regular_file()) out.push_back("/" + fs::relative(e.path(), impl_->files.path()).string());
  }
  return out;
}

DatabricksEmulator& SharedDatabricks() {
  static DatabricksEmulator emulator;
  return emulator;
}

std::string databricks_sink(const std::string& endpoint, const std::string& table, const std::string& extra) {
  return fmt::format(
      "Databricks: {{ host: dbc-test.cloud.databricks.com, token: \"{}\", warehouse_id: {}, catalog: {}, schema: {}, "
      "volume: {}, table: \"{}\", endpoint: \"{}\"{} }}",
      DatabricksEmulator::kToken, DatabricksEmulator::kWarehouse, DatabricksEmulator::kCatalog,
      DatabricksEmulator::kSchema, DatabricksEmulator::kVolume, table, endpoint, extra);
}

}  // namespace skippr::test
