#include "support/emulator_common.h"

#include <duckdb.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cctype>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>

namespace skippr::test {
namespace {

std::string base64url_decode(std::string text) {
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;
  while (text.size() % 4) text += '=';
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return "";
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

Key read_public_key(const std::string& pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  return Key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr, EVP_PKEY_free);
}

}  // namespace

EmulatorDb::EmulatorDb() {
  if (duckdb_open(nullptr, &db_) != DuckDBSuccess || duckdb_connect(db_, &con_) != DuckDBSuccess) {
    throw std::runtime_error("the emulator cannot open DuckDB");
  }
}

EmulatorDb::~EmulatorDb() {
  duckdb_disconnect(&con_);
  duckdb_close(&db_);
}

void Executions::start(std::function<void()> work) {
  {
    std::lock_guard lock(mutex_);
    ++running_;
  }
  std::thread([this, work = std::move(work)]() mutable {
    try {
      work();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "an emulator's execution failed: %s\n", e.what());
    }
    work = nullptr;  // what it holds goes before the owner may
    std::lock_guard lock(mutex_);
    --running_;
    done_.notify_all();
  }).detach();
}

void Executions::wait_all() {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return running_ == 0; });
}

int Executions::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

void TableLocks::acquire(const std::string& name, uint64_t owner) {
  std::unique_lock lock(mutex_);
  freed_.wait(lock, [&] {
    auto found = held_.find(name);
    return found == held_.end() || found->second == owner;
  });
  held_[name] = owner;
}

void TableLocks::release_all(uint64_t owner) {
  std::lock_guard lock(mutex_);
  std::erase_if(held_, [&](const auto& entry) { return entry.second == owner; });
  freed_.notify_all();
}

namespace {
EmulatorDb::Outcome run_on(duckdb_connection con, const std::string& sql) {
  EmulatorDb::Outcome out;
  duckdb_result result;
  if (duckdb_query(con, sql.c_str(), &result) != DuckDBSuccess) {
    out.ok = false;
    out.error = duckdb_result_error(&result);
    duckdb_destroy_result(&result);
    return out;
  }
  const idx_t columns = duckdb_column_count(&result);
  for (idx_t c = 0; c < columns; ++c) out.names.push_back(duckdb_column_name(&result, c));
  for (idx_t r = 0; r < duckdb_row_count(&result); ++r) {
    std::vector<nlohmann::json> row;
    for (idx_t c = 0; c < columns; ++c) {
      if (duckdb_value_is_null(&result, c, r)) {
        row.push_back(nullptr);
        continue;
      }
      char* text = duckdb_value_varchar(&result, c, r);
      row.push_back(std::string(text));
      duckdb_free(text);
    }
    out.rows.push_back(std::move(row));
  }
  duckdb_destroy_result(&result);
  return out;
}
}  // namespace

EmulatorDb::Outcome EmulatorDb::run(const std::string& sql) { return run_on(con_, sql); }

EmulatorDb::Session::Session(EmulatorDb& db) {
  if (duckdb_connect(db.db_, &con_) != DuckDBSuccess) throw std::runtime_error("the emulator cannot connect to DuckDB");
  for (const auto& sql : db.session_setup_) {
    auto out = run(sql);
    if (!out.ok) throw std::runtime_error("emulator session setup: " + out.error);
  }
}

EmulatorDb::Session::~Session() { duckdb_disconnect(&con_); }

EmulatorDb::Outcome EmulatorDb::Session::run(const std::string& sql) { return run_on(con_, sql); }

void EmulatorDb::on_each_session(const std::string& sql) {
  must(sql);
  session_setup_.push_back(sql);
}

void EmulatorDb::must(const std::string& sql) {
  auto out = run(sql);
  if (!out.ok) throw std::runtime_error("emulator setup: " + out.error + " in " + sql);
}

std::vector<std::vector<std::string>> EmulatorDb::text_rows(const std::string& sql) {
  Session reader(*this);  // a connection of its own: what is committed, whatever the executions are doing
  auto out = reader.run(sql);
  if (!out.ok) throw std::runtime_error("emulator query: " + out.error);
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : out.rows) {
    std::vector<std::string> values;
    for (const auto& v : row) values.push_back(v.is_null() ? "NULL" : v.get<std::string>());
    rows.push_back(std::move(values));
  }
  return rows;
}

std::optional<nlohmann::json> verified_rs256_claims(const std::string& jwt, const std::string& public_key_pem) {
  const size_t a = jwt.find('.'), b = jwt.find('.', a + 1);
  if (a == std::string::npos || b == std::string::npos) return std::nullopt;
  const auto header = nlohmann::json::parse(base64url_decode(jwt.substr(0, a)), nullptr, false);
  const auto claims = nlohmann::json::parse(base64url_decode(jwt.substr(a + 1, b - a - 1)), nullptr, false);
  const std::string signature = base64url_decode(jwt.substr(b + 1));
  if (!header.is_object() || header.value("alg", "") != "RS256" || !claims.is_object()) return std::nullopt;
  Key key = read_public_key(public_key_pem);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const std::string input = jwt.substr(0, b);
  const bool good =
      key && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  if (!good) return std::nullopt;
  return claims;
}

std::string public_key_sha256(const std::string& public_key_pem) {
  Key key = read_public_key(public_key_pem);
  if (!key) throw std::runtime_error("the emulator needs the user's public key (PEM)");
  unsigned char* der = nullptr;
  const int length = i2d_PUBKEY(key.get(), &der);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  EVP_Digest(der, static_cast<size_t>(length), digest, &digest_length, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  std::string b64(4 * ((digest_length + 2) / 3), '\0');
  EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()), digest, static_cast<int>(digest_length));
  return "SHA256:" + b64;
}

std::vector<SqlPiece> sql_pieces(const std::string& sql) {
  std::vector<SqlPiece> pieces;
  std::string text;
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c != '\'' && c != '"' && c != '`') {
      text += c;
      continue;
    }
    if (!text.empty()) pieces.push_back({SqlPiece::kText, std::move(text)}), text.clear();
    std::string value;
    size_t j = i + 1;
    for (; j < sql.size(); ++j) {
      if (c != '"' && sql[j] == '\\' && j + 1 < sql.size()) {
        const char e = sql[++j];
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == '0' ? '\0' : e;
        continue;
      }
      if (sql[j] == c) {
        if (j + 1 < sql.size() && sql[j + 1] == c) {
          value += c;
          ++j;
          continue;
        }
        break;
      }
      value += sql[j];
    }
    if (j >= sql.size()) throw std::invalid_argument("unterminated literal or name");
    pieces.push_back({c == '\''  ? SqlPiece::kLiteral
                      : c == '"' ? SqlPiece::kQuoted
                                 : SqlPiece::kBackticked,
                      std::move(value)});
    i = j;
  }
  if (!text.empty()) pieces.push_back({SqlPiece::kText, std::move(text)});
  return pieces;
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

std::string duckdb_quoted(const std::string& value, char q) {
  std::string out(1, q);
  for (char c : value) {
    if (c == q) out += q;
    out += c;
  }
  return out + q;
}

std::vector<std::string> split_statements(const std::string& sql) {
  // Cut on the raw text (each statement keeps its literals exactly as written, for the dialect's own reading).
  std::vector<std::string> statements;
  std::string current;
  char in = 0;  // the quote we are inside, or 0
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    current += c;
    if (in) {
      if (in != '"' && c == '\\' && i + 1 < sql.size()) {
        current += sql[++i];
      } else if (c == in) {
        in = 0;  // a doubled quote closes and reopens: the same outcome
      }
      continue;
    }
    if (c == '\'' || c == '"' || c == '`') {
      in = c;
    } else if (c == ';') {
      current.pop_back();
      if (current.find_first_not_of(" \n\t\r") != std::string::npos) statements.push_back(current);
      current.clear();
    }
  }
  if (in) throw std::invalid_argument("unterminated literal or name");
  if (current.find_first_not_of(" \n\t\r") != std::string::npos) statements.push_back(current);
  return statements;
}

}  // namespace skippr::test
