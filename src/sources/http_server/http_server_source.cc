#include "sources/http_server/http_server_source.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "formats/json_columns.h"

namespace skippr {
namespace {

constexpr auto kPollWait = std::chrono::milliseconds(200);  // how long a poll waits for the first request
constexpr int kHandlerThreads = 64;  // requests waiting for their commit each hold one; 32 clients must not starve

enum class AckMode { kCommitted, kReceived };

// Iterates over the expected token only, and never stops early, so the time taken does not reveal a matching prefix.
bool constant_time_equal(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ expected[i]);
  }
  return diff == 0;
}

struct Options {
  std::string host;
  int port = 0;
  std::string auth_token;
  AckMode ack = AckMode::kCommitted;
  size_t max_body_bytes = 0;
  size_t max_buffer_bytes = 0;
  double commit_timeout_seconds = 0;
};

class HttpServerSource final : public Source {
 public:
  HttpServerSource(std::string name, Options options) : name_(std::move(name)), options_(std::move(options)) {}

  ~HttpServerSource() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    committed_cv_.notify_all();
    data_cv_.notify_all();
    server_.stop();
    if (listener_.joinable()) listener_.join();
  }

  bool streaming() const override { return true; }

  Status open() override {
    server_.new_task_queue = [] { return new httplib::ThreadPool(kHandlerThreads); };
    server_.set_payload_max_length(options_.max_body_bytes);
    server_.set_tcp_nodelay(true);  // headers and body go out in two writes; Nagle + delayed ACK would add 40 ms
    server_.Post("/ingest", [this](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& content) { receive(req, res, content); });
    server_.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) { healthz(res); });
    // Binding here (the socket already listens; connections wait in the backlog) reports a taken port before anything
    // is read; requests are accepted only after seek(), once request numbers continue the WAL's.
    if (!server_.bind_to_port(options_.host, options_.port)) {
      return fail(ErrorKind::kConfig,
                  fmt::format("HttpServer source '{}': cannot listen on {}:{} (address in use or not local); choose "
                              "another listen_address",
                              name_, options_.host, options_.port));
    }
    return ok();
  }

  Status seek(const Position& position) override {
    uint64_t last = 0;
    if (!position.empty()) {
      auto parsed = nlohmann::json::parse(position.token, nullptr, false);
      if (!parsed.is_object() || !parsed.contains("request") || !parsed["request"].is_number_unsigned()) {
        return fail(ErrorKind::kCorruption,
                    fmt::format("HttpServer source '{}': unreadable resume position '{}'", name_, position.token));
      }
      last = parsed["request"].get<uint64_t>();
    }
    {
      std::lock_guard lock(mu_);
      last_request_ = committed_request_ = polled_request_ = last;
    }
    if (!listener_.joinable()) {
      listener_ = std::thread([this] {
        if (!server_.listen_after_bind()) spdlog::error("HttpServer source '{}': the listener stopped", name_);
      });
      spdlog::info("HttpServer source '{}' listening on {}:{} (ack: {})", name_, options_.host, options_.port,
                   options_.ack == AckMode::kCommitted ? "committed" : "received");
    }
    return ok();
  }

  // Hands over everything buffered; `drained` is always true so the engine cuts the batch at once (group commit:
  // every request that arrived while the previous batch was being committed shares this batch's fsync).
  Result<Poll> poll(const Budget&) override {
    std::unique_lock lock(mu_);
    data_cv_.wait_for(lock, kPollWait, [&] { return buffer_.rows > 0 || stopping_; });
    Poll result;
    result.records = std::move(buffer_);
    buffer_ = Batch{};
    polled_request_ = last_request_;
    result.position_after = Position{fmt::format(R"({{"request":{}}})", last_request_)};
    result.drained = true;
    return result;
  }

  Status acknowledge(const Position& position) override {
    auto parsed = nlohmann::json::parse(position.token, nullptr, false);
    if (!parsed.is_object() || !parsed["request"].is_number_unsigned()) {
      return fail(ErrorKind::kInternal, fmt::format("HttpServer source: unexpected position '{}'", position.token));
    }
    {
      std::lock_guard lock(mu_);
      committed_request_ = std::max(committed_request_, parsed["request"].get<uint64_t>());
    }
    committed_cv_.notify_all();
    return ok();
  }

 private:
  // Reads the body itself, bounded by max_body_bytes: httplib's own reading caps a form-urlencoded body at 8 KiB (a
  // 413 whatever max_body_bytes says), and `curl -d` sends JSON with exactly that content type.
  void receive(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& content) {
    std::string body;
    bool too_large = req.get_header_value<uint64_t>("Content-Length") > options_.max_body_bytes;
    const bool read = !too_large && content([&](const char* data, size_t n) {
      too_large = body.size() + n > options_.max_body_bytes;
      if (!too_large) body.append(data, n);
      return !too_large;
    });
    if (too_large) {
      res.set_header("Connection", "close");  // the rest of the body is not read
      return reply(res, 413,
                   fmt::format("the request body is larger than max_body_bytes ({} bytes); send fewer "
                               "records per request",
                               options_.max_body_bytes));
    }
    if (!read) return reply(res, 400, "the request body could not be read");
    ingest(req, body, res);
  }

  void ingest(const httplib::Request& req, const std::string& body, httplib::Response& res) {
    if (!options_.auth_token.empty() &&
        !constant_time_equal(req.get_header_value("Authorization"), "Bearer " + options_.auth_token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      return reply(res, 401, "missing or wrong token: send the header 'Authorization: Bearer <auth_token>'");
    }
    Batch records;
    if (auto st = append_json_text(body, "request body", records); !st) {
      return reply(res, 400, st.error().message + "; nothing from this request was accepted");
    }
    const size_t rows = records.rows;
    uint64_t request = 0;
    {
      std::unique_lock lock(mu_);
      if (stopping_) return busy(res, "the pipeline is stopping");
      if (buffer_.rows > 0 && buffer_.byte_size() + records.byte_size() > options_.max_buffer_bytes) {
        return busy(res, "the buffer is full (the WAL or the destination is behind)");
      }
      if (auto st = conform_to_seen_types(records); !st) {
        return reply(res, 400, st.error().message + "; nothing from this request was accepted");
      }
      if (buffer_.rows == 0) {
        buffer_ = std::move(records);
      } else if (auto st = buffer_.append(records); !st) {
        return reply(res, 400, st.error().message + "; nothing from this request was accepted");
      }
      request = ++last_request_;
      if (options_.ack == AckMode::kCommitted) {
        data_cv_.notify_one();
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.commit_timeout_seconds);
        const bool committed =
            committed_cv_.wait_until(lock, deadline, [&] { return committed_request_ >= request || stopping_; });
        if (!committed || committed_request_ < request) {
          // Not known to be committed: the client retries; the records may then land twice, never zero times.
          return busy(res, "the records were not committed in time");
        }
      }
    }
    data_cv_.notify_one();
    res.status = 200;
    res.set_content(fmt::format(R"({{"accepted":{},"request":{}}})", rows, request), "application/json");
  }

  // Types are fixed by the first record that carries a field (the destination's column has that type by then);
  // an int where a double was seen is widened, anything else is a 400 naming the field.
  Status conform_to_seen_types(Batch& records) {
    for (size_t i = 0; i < records.schema.fields.size(); ++i) {
      Field& field = records.schema.fields[i];
      auto [it, inserted] = seen_types_.emplace(field.name, field.type);
      if (inserted || it->second == field.type) continue;
      if (it->second == Type::kDouble && field.type == Type::kInt64) {
        Column widened(Type::kDouble);
        const Column& column = records.columns[i];
        for (size_t row = 0; row < column.size(); ++row) {
          column.is_valid(row) ? widened.append_double(static_cast<double>(column.int_at(row))) : widened.append_null();
        }
        records.columns[i] = std::move(widened);
        field.type = Type::kDouble;
        continue;
      }
      return fail(ErrorKind::kBadInput, fmt::format("field '{}' is {} here but {} in earlier requests", field.name,
                                                    to_string(field.type), to_string(it->second)));
    }
    return ok();
  }

  void healthz(httplib::Response& res) {
    std::lock_guard lock(mu_);
    res.set_content(fmt::format(R"({{"status":"ok","last_request":{},"committed_request":{},"buffered_rows":{}}})",
                                last_request_, committed_request_, buffer_.rows),
                    "application/json");
  }

  static void reply(httplib::Response& res, int status, const std::string& message) {
    res.status = status;
    std::string body = R"({"error":)";
    body += nlohmann::json(message).dump();
    body += "}";
    res.set_content(body, "application/json");
  }

  static void busy(httplib::Response& res, const std::string& why) {
    res.set_header("Retry-After", "1");
    reply(res, 503, why + "; retry after 1 second");
  }

  std::string name_;
  Options options_;
  httplib::Server server_;
  std::thread listener_;

  std::mutex mu_;
  std::condition_variable data_cv_;       // a request was buffered
  std::condition_variable committed_cv_;  // committed_request_ moved
  Batch buffer_;
  std::map<std::string, Type> seen_types_;
  uint64_t last_request_ = 0;       // requests are numbered in arrival order, continuing the WAL's position
  uint64_t polled_request_ = 0;     // everything up to here was handed to the engine
  uint64_t committed_request_ = 0;  // everything up to here is in the WAL
  bool stopping_ = false;
};

Result<Options> read_options(const ConnectorContext& ctx) {
  const auto& p = ctx.params;
  Options o;
  const std::string address = p.value("listen_address", std::string("127.0.0.1:8080"));
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon != std::string::npos) {
    try {
      port = std::stoi(address.substr(colon + 1));
    } catch (...) {
    }
  }
  if (colon == std::string::npos || colon == 0 || port < 0 || port > 65535) {
    return fail(ErrorKind::kConfig, fmt::format("HttpServer source '{}': listen_address '{}' must be host:port, e.g. "
                                                "0.0.0.0:8080",
                                                ctx.name, address));
  }
  o.host = address.substr(0, colon);
  o.port = port;
  o.auth_token = p.value("auth_token", std::string());
  const std::string ack = p.value("ack", std::string("committed"));
  if (ack == "committed") {
    o.ack = AckMode::kCommitted;
  } else if (ack == "received") {
    o.ack = AckMode::kReceived;
  } else {
    return fail(ErrorKind::kConfig,
                fmt::format("HttpServer source '{}': ack '{}' must be committed or received", ctx.name, ack));
  }
  const int64_t max_body = p.value("max_body_bytes", int64_t{10 << 20});
  const int64_t max_buffer = p.value("max_buffer_bytes", int64_t{64 << 20});
  o.commit_timeout_seconds = p.value("commit_timeout_seconds", 30.0);
  if (max_body <= 0 || max_buffer <= 0 || o.commit_timeout_seconds <= 0) {
    return fail(ErrorKind::kConfig, fmt::format("HttpServer source '{}': max_body_bytes, max_buffer_bytes and "
                                                "commit_timeout_seconds must be positive",
                                                ctx.name));
  }
  o.max_body_bytes = static_cast<size_t>(max_body);
  o.max_buffer_bytes = static_cast<size_t>(max_buffer);
  // Without a token, anyone who can reach the address can write records: only loopback is safe to leave open.
  const std::string& host = o.host;
  const bool loopback = host == "localhost" || host.starts_with("127.") || host == "::1" || host == "[::1]";
  if (o.auth_token.empty() && !loopback && !p.value("allow_unauthenticated", false)) {
    return fail(ErrorKind::kConfig,
                fmt::format("HttpServer source '{}': listen_address {} is reachable from other machines and there is "
                            "no auth_token; set auth_token (e.g. \"${{INGEST_TOKEN}}\"), listen on 127.0.0.1, or say "
                            "allow_unauthenticated: true",
                            ctx.name, address));
  }
  if (o.auth_token.empty() && !loopback) {
    spdlog::warn("HttpServer source '{}': no auth_token, anyone who can reach {} can send records", ctx.name, address);
  }
  return o;
}

}  // namespace

ConnectorSpec http_server_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "HttpServer";
  spec.is_source = true;
  spec.summary = "receives JSON records by HTTP POST /ingest; 200 once committed to the WAL";
  spec.params = {
      {"listen_address", ParamType::kString, false, "127.0.0.1:8080", "host:port to listen on"},
      {"auth_token", ParamType::kString, false, "",
       "required as 'Authorization: Bearer <token>' when set (use ${VAR} to keep it out of the file)"},
      {"ack", ParamType::kString, false, "committed",
       "committed: 200 after the WAL commit (nothing acknowledged is lost); received: 200 at once (faster, a crash "
       "loses what was not yet committed)"},
      {"max_body_bytes", ParamType::kInt, false, 10 << 20, "larger requests get 413"},
      {"max_buffer_bytes", ParamType::kInt, false, 64 << 20,
       "records waiting for a commit; beyond it requests get 503"},
      {"commit_timeout_seconds", ParamType::kDouble, false, 30.0,
       "with ack: committed, a request not committed by then gets 503 (the client retries)"},
      {"allow_unauthenticated", ParamType::kBool, false, false,
       "listen on a non-loopback address without auth_token (refused otherwise)"},
  };
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    auto options = read_options(ctx);
    if (!options) return std::unexpected(options.error());
    return std::make_unique<HttpServerSource>(ctx.name, std::move(*options));
  };
  return spec;
}

}  // namespace skippr
