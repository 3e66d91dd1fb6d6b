// Test support shared by the cloud-API emulators (Snowflake, BigQuery, Databricks): an in-memory DuckDB that runs their
// SQL, the check of an RS256 JWT against a public key, and a reader of SQL text that tells literals and quoted names
// apart.
#pragma once

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct _duckdb_database;
struct _duckdb_connection;

namespace skippr::test {

// Executions that run on threads of their own and outlive the HTTP request that started them, as a warehouse's
// statements and jobs outlive their client. The owner waits for all of them when it goes (wait_all, in its destructor,
// before what they use is gone).
class Executions {
 public:
  ~Executions() { wait_all(); }
  void start(std::function<void()> work);
  void wait_all();
  int running() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_;
  int running_ = 0;
};

// Named locks held by an owner until it lets all of them go (a table lock held to the end of a transaction).
class TableLocks {
 public:
  void acquire(const std::string& name, uint64_t owner);
  void release_all(uint64_t owner);

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  std::map<std::string, uint64_t> held_;
};

class EmulatorDb {
 public:
  EmulatorDb();
  ~EmulatorDb();
  EmulatorDb(const EmulatorDb&) = delete;
  EmulatorDb& operator=(const EmulatorDb&) = delete;

  struct Outcome {
    bool ok = true;
    std::string error;
    std::vector<std::string> names;
    std::vector<std::vector<nlohmann::json>> rows;  // text or null
  };
  // A connection of its own on the same database: the transactions of two sessions run side by side under DuckDB's
  // snapshot isolation (a row two open transactions update: the second fails with a conflict).
  class Session {
   public:
    explicit Session(EmulatorDb& db);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;
    Outcome run(const std::string& sql);

   private:
    _duckdb_connection* con_ = nullptr;
  };
  // On the emulator's own connection (one caller at a time: take mutex()).
  Outcome run(const std::string& sql);
  // Throws with the error when `sql` fails (setup statements).
  void must(const std::string& sql);
  // A statement every connection runs first (TEMP macros and views are per connection); run here at once.
  void on_each_session(const std::string& sql);
  // Rows of text ("NULL" for null) on a session of its own, as a reader of the emulated warehouse sees them (what is
  // committed); throws on error.
  std::vector<std::vector<std::string>> text_rows(const std::string& sql);
  std::mutex& mutex() { return mutex_; }  // one request at a time on the emulator's own connection

 private:
  _duckdb_database* db_ = nullptr;
  _duckdb_connection* con_ = nullptr;
  std::mutex mutex_;
  std::vector<std::string> session_setup_;
};

// The JWT's claims when its header says RS256 and its signature verifies with `public_key_pem`; nullopt otherwise.
std::optional<nlohmann::json> verified_rs256_claims(const std::string& jwt, const std::string& public_key_pem);
// "SHA256:" + base64 of the SHA-256 of the key's DER SubjectPublicKeyInfo (Snowflake's RSA_PUBLIC_KEY_FP).
std::string public_key_sha256(const std::string& public_key_pem);

// SQL text in pieces: literals ('...', with backslash escapes as Snowflake and BigQuery read them, '' as a quote),
// names in double quotes or backticks, and the text between.
struct SqlPiece {
  enum Kind { kText, kLiteral, kQuoted, kBackticked } kind;
  std::string text;  // a literal's or a name's value (unescaped); text as written
};
std::vector<SqlPiece> sql_pieces(const std::string& sql);
// `text` in upper case (ASCII): how the emulated services compare unquoted names and keywords.
std::string upper(std::string text);
// `value` quoted with `q` ('\'' or '"'), a quote inside doubled: DuckDB's syntax.
std::string duckdb_quoted(const std::string& value, char q);
// `sql` cut at the semicolons outside literals and names; empty statements dropped.
std::vector<std::string> split_statements(const std::string& sql);

}  // namespace skippr::test
