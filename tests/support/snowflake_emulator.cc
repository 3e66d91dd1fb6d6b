#include "support/snowflake_emulator.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "support/emulator_common.h"
#include "support/process.h"
#include "support/test_keys.h"

namespace skippr::test {
namespace {
// The patterns below are never destroyed: an execution outlives the request that started it, and one still running
// when the test binary exits must not meet a pattern the exit has already destroyed.

// The rewrites of Snowflake's words into DuckDB's, outside literals and names. Functions DuckDB lacks are macros
// made when the database opens (parse_json, to_binary).
std::string rewrite_text(std::string text) {
  static const auto& kRewrites = *new std::vector<std::pair<std::regex, std::string>>{
      {std::regex(R"(\bTIMESTAMP_NTZ\b)", std::regex::icase), "TIMESTAMP"},
      {std::regex(R"(\bTIMESTAMP_(LTZ|TZ)\b)", std::regex::icase), "TIMESTAMPTZ"},
      {std::regex(R"(\bVARIANT\b)", std::regex::icase), "JSON"},
      {std::regex(R"(\bNUMBER\b)", std::regex::icase), "DECIMAL"},
      {std::regex(R"(\bFLOAT\b)", std::regex::icase), "DOUBLE"},
      {std::regex(R"(\bBINARY\b)", std::regex::icase), "BLOB"},
      {std::regex(R"(\bCURRENT_TIMESTAMP\(\))", std::regex::icase), "current_timestamp"},
      {std::regex(R"(\binformation_schema\.columns\b)", std::regex::icase), "sf_information_schema_columns"},
  };
  // Between two literals of a VALUES list there is only ", " or "), (": nothing to rewrite, and the list is long.
  if (std::none_of(text.begin(), text.end(), [](unsigned char c) { return std::isalpha(c); })) return text;
  for (const auto& [pattern, replacement] : kRewrites) text = std::regex_replace(text, pattern, replacement);
  return text;
}

}  // namespace

std::string to_duckdb_sql(const std::string& snowflake_sql) {
  std::string out;
  const auto pieces = sql_pieces(snowflake_sql);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const SqlPiece& p = pieces[i];
    if (p.kind == SqlPiece::kLiteral) {
      out += duckdb_quoted(p.text, '\'');
    } else if (p.kind == SqlPiece::kQuoted || p.kind == SqlPiece::kBackticked) {
      // "DB".information_schema.columns: the view is database-wide already.
      const bool before_catalog = i + 1 < pieces.size() && pieces[i + 1].kind == SqlPiece::kText &&
                                  upper(pieces[i + 1].text).starts_with(".INFORMATION_SCHEMA.COLUMNS");
      if (before_catalog) {
        ++i;
        out += rewrite_text(pieces[i].text.substr(1));
      } else {
        out += duckdb_quoted(p.text, '"');
      }
    } else {
      out += rewrite_text(p.text);
    }
  }
  return out;
}

// One request's execution: it runs on a thread of its own, on a session of its own, and outlives the HTTP request
// (and the client) that started it.
struct SfExecution {
  std::string handle, request_id;
  bool done = false;
  int status = 0;
  std::string answer;  // the body once done
};

struct SnowflakeEmulator::Impl {
  SnowflakeEmulatorOptions options;
  httplib::Server server;
  EmulatorDb db;
  std::mutex mutex;  // the emulator's own state below (the database has its own sessions)
  std::condition_variable finished;
  std::string fingerprint;
  std::map<std::string, std::shared_ptr<SfExecution>> by_request_id;  // requests of at most 1 MB of SQL text
  std::map<std::string, std::shared_ptr<SfExecution>> by_handle;
  std::vector<SnowflakeRequestSeen> seen;
  std::atomic<bool> async{false};
  std::atomic<int> answer_within_ms{45000};
  std::string slow_text;  // statements containing it (upper-case) wait slow_ms before they run
  std::atomic<int> slow_ms{0};
  int slow_times = -1;  // how many more statements are slowed (-1: all)
  int next_handle = 1;
  std::map<std::string, std::function<std::optional<std::string>(const std::string&)>> stages;  // upper-case names
  std::set<std::string> loaded;  // TABLE|stage/path/file COPY INTO has loaded (committed)
  std::vector<std::pair<std::string, std::string>> loads;
  int skipped = 0;
  std::atomic<int> staged_count{0};
  TempDir staged_files;
  TableLocks locks;
  std::atomic<uint64_t> next_owner{1};
  Executions executions;  // last: waited for before anything above goes

  using Outcome = EmulatorDb::Outcome;

  // COPY INTO from a registered stage; `new_loads` collects what this request loaded (kept once it commits).
  Outcome copy_into(EmulatorDb::Session& session, const std::string& sql, std::set<std::string>& new_loads) {
    static const std::regex& kCopy = *new std::regex(
        R"(^\s*COPY\s+INTO\s+(.+?)\s*\(([^)]*)\)\s+FROM\s+\(SELECT\s+(.*)\s+FROM\s+@([^/\s]+)/([^\s)]*)\)\s+FILES\s*=\s*\((.*?)\)\s+FILE_FORMAT\s*=\s*\(\s*TYPE\s*=\s*JSON\s*\)\s*(FORCE\s*=\s*TRUE)?\s*$)",
        std::regex::icase);
    std::smatch m;
    if (!std::regex_match(sql, m, kCopy)) {
      return {false,
              "the emulator takes COPY INTO t (cols) FROM (SELECT ... FROM @stage/path/) FILES = (...) "
              "FILE_FORMAT = (TYPE = JSON) [FORCE = TRUE]",
              {},
              {}};
    }
    const std::string table = m[1], columns = m[2], stage = upper(m[4]), path = m[5];
    const bool force = m[7].matched;
    std::function<std::optional<std::string>(const std::string&)> fetch;
    {
      std::lock_guard lock(mutex);
      auto found = stages.find(stage);
      if (found != stages.end()) fetch = found->second;
    }
    if (!fetch) {
      return {
          false, fmt::format("SQL compilation error:\nStage '{}' does not exist or not authorized.", stage), {}, {}};
    }
    // $1:"field"::VARCHAR -> the field's text in the row's JSON object.
    static const std::regex& kField = *new std::regex(R"re(\$1:"((?:[^"]|"")*)")re");
    const std::string select =
        to_duckdb_sql(std::regex_replace(std::string(m[3]), kField, "json_extract_string(j, '$.\"$1\"')"));
    const std::string target = to_duckdb_sql(table);
    const std::string names = m[6];
    static const std::regex& kName = *new std::regex(R"('([^']*)')");
    int64_t inserted = 0;
    for (auto it = std::sregex_iterator(names.begin(), names.end(), kName); it != std::sregex_iterator(); ++it) {
      const std::string file = stage + "/" + path + (*it)[1].str();
      const std::string key = upper(target) + "|" + file;
      {
        std::lock_guard lock(mutex);
        if (!force && (loaded.contains(key) || new_loads.contains(key))) {
          ++skipped;  // in the table's load history: COPY INTO skips it
          continue;
        }
      }
      auto bytes = fetch(path + (*it)[1].str());
      if (!bytes) return {false, fmt::format("Remote file '{}' was not found.", file), {}, {}};
      const auto local = staged_files / fmt::format("{}.json", staged_count++);
      write_text(local, *bytes);
      auto done =
          session.run(fmt::format("INSERT INTO {} ({}) SELECT {} FROM (SELECT json AS j FROM read_ndjson_objects({}))",
                                  target, to_duckdb_sql(columns), select, duckdb_quoted(local.string(), '\'')));
      std::filesystem::remove(local);
      if (!done.ok) return done;
      inserted += done.rows.empty() ? 0 : std::stoll(done.rows[0][0].get<std::string>());
      new_loads.insert(key);
      std::lock_guard lock(mutex);
      loads.emplace_back(file, target);
    }
    Outcome out;
    out.names = {"file", "status", "rows_loaded"};
    out.rows = {{names, "LOADED", std::to_string(inserted)}};
    return out;
  }

  static nlohmann::json error_body(const std::string& code, const std::string& message, const std::string& handle) {
    return {{"code", code}, {"message", message}, {"sqlState", "42000"}, {"statementHandle", handle}};
  }

  std::string handle() {  // under mutex
    const int n = next_handle++;
    return fmt::format("01b2c3d4-0000-{:04x}-0000-{:012x}", n / 65536, n);
  }

  bool authorized(const httplib::Request& req) {
    if (req.get_header_value("X-Snowflake-Authorization-Token-Type") != "KEYPAIR_JWT") return false;
    const std::string auth = req.get_header_value("Authorization");
    if (!auth.starts_with("Bearer ")) return false;
    const auto claims = verified_rs256_claims(auth.substr(7), options.public_key_pem);
    if (!claims) return false;
    const std::string qualified = upper(options.account) + "." + upper(options.user);
    const int64_t now = std::time(nullptr);
    if (claims->value("iss", "") != qualified + "." + fingerprint || claims->value("sub", "") != qualified) {
      return false;
    }
    const auto& exp = (*claims)["exp"];
    return exp.is_number_integer() && exp.get<int64_t>() >= now &&
           exp.get<int64_t>() - claims->value("iat", int64_t{0}) <= 3600;
  }

  // The table an UPDATE, DELETE or MERGE locks (Snowflake: such statements on one table wait for each other, to the
  // end of the transaction that ran them); empty for any other statement. Names are compared as written.
  static std::string locked_table(const std::string& statement) {
    static const std::regex& kLocking = *new std::regex(
        R"(^\s*(?:UPDATE|DELETE\s+FROM|MERGE\s+INTO)\s+((?:"(?:[^"]|"")*"|[^\s"(])+))", std::regex::icase);
    std::smatch m;
    return std::regex_search(statement, m, kLocking) ? m[1].str() : std::string();
  }

  // Runs the request's statements on a session of its own; the status and body Snowflake would answer. Transactions
  // are READ COMMITTED as far as this emulator can: a transaction's DuckDB snapshot is taken at its first statement,
  // after any table lock that statement waits for, so what the lock's earlier holder committed is visible to it.
  std::pair<int, nlohmann::json> execute(const nlohmann::json& body, const std::string& request_id,
                                         const std::string& h) {
    const std::string database = body.value("database", "");
    if (body.value("warehouse", "") != options.warehouse) {
      return {422, error_body("000606",
                              "No active warehouse selected in the current session.  Select an active warehouse with "
                              "the 'use warehouse' command.",
                              h)};
    }
    if (std::find(options.databases.begin(), options.databases.end(), database) == options.databases.end()) {
      return {422, error_body("390201", "The requested database does not exist or not authorized.", h)};
    }
    std::vector<std::string> statements;
    try {
      statements = split_statements(body.value("statement", ""));
    } catch (const std::exception& e) {
      return {422, error_body("001003", std::string("SQL compilation error: ") + e.what(), h)};
    }
    std::string count_text = "1";
    if (body.contains("parameters")) count_text = body["parameters"].value("MULTI_STATEMENT_COUNT", "1");
    const size_t wanted = std::stoul(count_text);
    if (wanted != 0 && wanted != statements.size()) {
      return {422, error_body("000008",
                              fmt::format("Actual statement count {} did not match the desired statement count {}.",
                                          statements.size(), wanted),
                              h)};
    }
    EmulatorDb::Session session(db);
    const uint64_t owner = next_owner++;
    // Whatever way this returns (or throws), the table locks go with the session: none outlives its execution.
    struct ReleaseLocks {
      TableLocks& locks;
      uint64_t owner;
      ~ReleaseLocks() { locks.release_all(owner); }
    } release{locks, owner};
    session.run(fmt::format("USE \"{}\".\"{}\"", database, body.value("schema", "PUBLIC")));
    Outcome last;
    std::vector<std::string> handles;
    bool in_transaction = false, snapshot_taken = false;
    std::set<std::string> new_loads;
    auto end_transaction = [&](const char* how) {
      if (snapshot_taken) session.run(how);
      locks.release_all(owner);
      in_transaction = snapshot_taken = false;
    };
    for (const auto& statement : statements) {
      // Snowflake's limit on the text of one statement.
      if (statement.size() > (1u << 20)) {
        end_transaction("ROLLBACK");
        return {422, error_body("001003", "SQL compilation error: statement is too large (over 1 MB of text)", h)};
      }
      const std::string word = upper(statement.substr(statement.find_first_not_of(" \n\t"), 6));
      if (word.starts_with("BEGIN")) {
        in_transaction = true;
      } else if (word.starts_with("COMMIT")) {
        if (snapshot_taken) last = session.run("COMMIT");
        end_transaction("ROLLBACK");  // after a COMMIT: only the locks go
      } else {
        if (const std::string table = locked_table(statement); !table.empty()) locks.acquire(table, owner);
        if (in_transaction && !snapshot_taken) {
          session.run("BEGIN TRANSACTION");
          snapshot_taken = true;
        }
        last =
            word.starts_with("COPY") ? copy_into(session, statement, new_loads) : session.run(to_duckdb_sql(statement));
        // A slow statement: it has run (on what was committed when it began) and holds its transaction's locks for
        // `slow_ms` more, as one that executes that long would.
        if (slow_ms > 0 && last.ok) {
          bool slow;
          {
            std::lock_guard lock(mutex);
            slow = slow_times != 0 && upper(statement).find(slow_text) != std::string::npos;
            if (slow && slow_times > 0) --slow_times;
          }
          if (slow) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms.load()));
        }
        if (!in_transaction) locks.release_all(owner);
      }
      if (!last.ok) {
        end_transaction("ROLLBACK");
        return {422, error_body("002003", "SQL compilation error:\n" + last.error, h)};
      }
      std::lock_guard lock(mutex);
      handles.push_back(handle());
    }
    if (in_transaction) {
      end_transaction("ROLLBACK");  // a request that leaves its transaction open: Snowflake rolls it back
    } else {
      std::lock_guard lock(mutex);
      loaded.insert(new_loads.begin(), new_loads.end());
    }
    nlohmann::json answer = {{"code", "090001"},
                             {"sqlState", "00000"},
                             {"statementHandle", h},
                             {"requestId", request_id},
                             {"message", "Statement executed successfully."},
                             {"createdOn", static_cast<int64_t>(std::time(nullptr)) * 1000},
                             {"statementStatusUrl", "/api/v2/statements/" + h + "?requestId=" + request_id}};
    if (statements.size() > 1) {
      answer["statementHandles"] = handles;
      answer["resultSetMetaData"] = {{"numRows", 1},
                                     {"format", "jsonv2"},
                                     {"rowType", {{{"name", "multiple statement execution"}, {"type", "text"}}}},
                                     {"partitionInfo", {{{"rowCount", 1}}}}};
      answer["data"] = {{"Multiple statements executed successfully."}};
    } else {
      nlohmann::json row_type = nlohmann::json::array();
      for (const auto& name : last.names) row_type.push_back({{"name", upper(name)}, {"type", "text"}});
      answer["resultSetMetaData"] = {{"numRows", last.rows.size()},
                                     {"format", "jsonv2"},
                                     {"rowType", row_type},
                                     {"partitionInfo", {{{"rowCount", last.rows.size()}}}}};
      answer["data"] = last.rows;
    }
    return {200, answer};
  }

  static std::string still_running(const SfExecution& e) {
    return nlohmann::json{{"code", "333334"},
                          {"message",
                           "Asynchronous execution in progress. Use provided query id to perform query monitoring and "
                           "management."},
                          {"statementHandle", e.handle},
                          {"statementStatusUrl", "/api/v2/statements/" + e.handle + "?requestId=" + e.request_id}}
        .dump();
  }

  void answer(const SfExecution& e, httplib::Response& res) {  // under mutex
    res.status = e.done ? e.status : 202;
    res.set_content(e.done ? e.answer : still_running(e), "application/json");
  }

  void post(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req)) {
      res.status = 401;
      res.set_content(R"({"code":"390144","message":"JWT token is invalid."})", "application/json");
      return;
    }
    const std::string request_id = req.get_param_value("requestId");
    const bool retry = req.get_param_value("retry") == "true";
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("statement")) {
      res.status = 400;
      res.set_content(R"({"code":"391902","message":"Unsupported Accept header or request body."})",
                      "application/json");
      return;
    }
    // Snowflake keeps a request's text for matching its requestId up to 1 MB only: a larger one resent runs again.
    const bool remembered = !request_id.empty() && body.value("statement", "").size() <= (1u << 20);
    std::unique_lock lock(mutex);
    std::map<std::string, std::string> headers;
    for (const auto& [name, value] : req.headers) headers[name] = name == "Authorization" ? value.substr(0, 7) : value;
    seen.push_back({request_id, retry, false, body.value("statement", ""), req.body, headers});
    std::shared_ptr<SfExecution> execution;
    if (auto earlier = by_request_id.find(request_id); retry && remembered && earlier != by_request_id.end()) {
      execution = earlier->second;  // answered from that execution, finished or still running
    } else {
      seen.back().executed = true;
      execution = std::make_shared<SfExecution>();
      execution->handle = handle();
      execution->request_id = request_id;
      by_handle[execution->handle] = execution;
      if (remembered) by_request_id[request_id] = execution;
      executions.start([this, execution, body = std::move(body)] {
        std::pair<int, nlohmann::json> outcome;
        try {
          outcome = execute(body, execution->request_id, execution->handle);
        } catch (const std::exception& e) {  // a request the emulator cannot read (a number where text belongs)
          outcome = {422, error_body("002003", std::string("SQL compilation error: ") + e.what(), execution->handle)};
        }
        auto& [status, answer] = outcome;
        std::lock_guard done_lock(mutex);
        execution->status = status;
        execution->answer = answer.dump();
        execution->done = true;
        finished.notify_all();
      });
    }
    // Snowflake answers 202 when the statement has not finished within 45 s (or at once when asked to).
    if (!async && req.get_param_value("async") != "true") {
      finished.wait_for(lock, std::chrono::milliseconds(answer_within_ms.load()), [&] { return execution->done; });
    }
    answer(*execution, res);
  }

  void get(const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req)) {
      res.status = 401;
      res.set_content(R"({"code":"390144","message":"JWT token is invalid."})", "application/json");
      return;
    }
    std::lock_guard lock(mutex);
    auto found = by_handle.find(req.matches[1]);
    if (found == by_handle.end()) {
      res.status = 404;
      res.set_content(R"({"code":"333333","message":"Statement not found."})", "application/json");
      return;
    }
    answer(*found->second, res);
  }
};

SnowflakeEmulator::SnowflakeEmulator(SnowflakeEmulatorOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  auto& o = impl_->options;
  impl_->fingerprint = public_key_sha256(o.public_key_pem);
  auto must = [&](const std::string& sql) { impl_->db.must(sql); };
  for (const auto& database : o.databases) {
    must(fmt::format("ATTACH ':memory:' AS \"{}\"", database));
    must(fmt::format("CREATE SCHEMA \"{}\".\"PUBLIC\"", database));
  }
  auto each_session = [&](const std::string& sql) { impl_->db.on_each_session(sql); };
  each_session("CREATE TEMP MACRO parse_json(x) AS CAST(x AS JSON)");
  each_session(
      "CREATE TEMP MACRO to_binary(x, f) AS CASE WHEN upper(f) = 'BASE64' THEN from_base64(x) ELSE unhex(x) END");
  // information_schema.columns with Snowflake's names for the types (data_type as Snowflake reports it).
  each_session(R"(CREATE TEMP VIEW sf_information_schema_columns AS SELECT table_catalog, table_schema, table_name,
    column_name, ordinal_position, CASE WHEN data_type LIKE 'DECIMAL%' OR data_type IN ('BIGINT', 'INTEGER')
    THEN 'NUMBER' WHEN data_type = 'DOUBLE' THEN 'FLOAT' WHEN data_type = 'VARCHAR' THEN 'TEXT' WHEN data_type =
    'TIMESTAMP' THEN 'TIMESTAMP_NTZ' WHEN data_type = 'TIMESTAMP WITH TIME ZONE' THEN 'TIMESTAMP_LTZ' WHEN data_type
    = 'JSON' THEN 'VARIANT' WHEN data_type = 'BLOB' THEN 'BINARY' ELSE data_type END AS data_type FROM
    information_schema.columns)");
  impl_->server.Post("/api/v2/statements",
                     [this](const httplib::Request& req, httplib::Response& res) { impl_->post(req, res); });
  impl_->server.Get(R"(/api/v2/statements/([0-9a-f-]+))",
                    [this](const httplib::Request& req, httplib::Response& res) { impl_->get(req, res); });
  port_ = impl_->server.bind_to_any_port("127.0.0.1");
  thread_ = std::thread([this] { impl_->server.listen_after_bind(); });
  while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

SnowflakeEmulator::~SnowflakeEmulator() {
  impl_->server.stop();
  if (thread_.joinable()) thread_.join();
  impl_->executions.wait_all();
}

void SnowflakeEmulator::answer_within(std::chrono::milliseconds wait) {
  impl_->answer_within_ms = static_cast<int>(wait.count());
}

void SnowflakeEmulator::slow_statements(const std::string& containing, std::chrono::milliseconds delay, int times) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->slow_text = upper(containing);
    impl_->slow_times = times;
  }
  impl_->slow_ms = static_cast<int>(delay.count());
}

int SnowflakeEmulator::running_executions() const { return impl_->executions.running(); }

void SnowflakeEmulator::answer_async(bool on) { impl_->async = on; }

void SnowflakeEmulator::add_stage(const std::string& name,
                                  std::function<std::optional<std::string>(const std::string&)> fetch) {
  std::lock_guard lock(impl_->mutex);
  impl_->stages[upper(name)] = std::move(fetch);
}

std::vector<std::pair<std::string, std::string>> SnowflakeEmulator::loads() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->loads;
}

int SnowflakeEmulator::skipped_loads() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->skipped;
}

std::vector<std::vector<std::string>> SnowflakeEmulator::query(const std::string& duckdb_sql) {
  return impl_->db.text_rows(duckdb_sql);
}

std::vector<SnowflakeRequestSeen> SnowflakeEmulator::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->seen;
}

namespace {
struct TestKeys {
  TempDir dir;
  std::filesystem::path private_key = dir / "loader.pem", public_key = dir / "loader.pub";
  TestKeys() { make_rsa_key(dir.path(), "loader"); }
};
TestKeys& shared_keys() {
  static TestKeys keys;
  return keys;
}
}  // namespace

const std::filesystem::path& snowflake_test_private_key() { return shared_keys().private_key; }

SnowflakeEmulator& SharedSnowflake() {
  static SnowflakeEmulator emulator({.public_key_pem = read_text(shared_keys().public_key)});
  return emulator;
}

std::string snowflake_sink(const std::string& endpoint, const std::string& table, const std::string& extra) {
  return fmt::format(
      "Snowflake: {{ account: testorg-skippr, user: loader, private_key_file: \"{}\", warehouse: LOAD_WH, "
      "database: ANALYTICS, table: \"{}\", endpoint: \"{}\"{} }}",
      snowflake_test_private_key().string(), table, endpoint, extra);
}

}  // namespace skippr::test
