#include "sources/http_server/http_server_source.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "clients/http/mhd_server.h"
#include "formats/json_columns.h"
#include "sources/http_server/http_server_options.h"

namespace skippr {
namespace {

constexpr auto kPollWait = std::chrono::milliseconds(200);  // how long a poll waits for the first request

using http_server::AckMode;
using http_server::Options;
using http_server::Pending;
using http_server::Reply;
using http_server::Request;

// Iterates over the expected token only, and never stops early, so the time taken does not reveal a matching prefix.
bool constant_time_equal(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ expected[i]);
  }
  return diff == 0;
}

class HttpServerSource final : public Source {
 public:
  HttpServerSource(std::string name, Options options)
      : name_(std::move(name)),
        options_(std::move(options)),
        server_(
            name_, {options_.max_body_bytes, options_.max_connections, options_.client_timeout_seconds},
            [this](const Request& request) { return check_head(request); },
            [this](const Request& request, Pending* pending) { return handle(request, pending); }) {}

  ~HttpServerSource() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    committed_cv_.notify_all();
    data_cv_.notify_all();
    if (answerer_.joinable()) answerer_.join();  // it answers every waiting request (503) before it ends
    server_.stop();
  }

  bool streaming() const override { return true; }
  bool names_streams() const override { return !options_.streams.empty(); }

  // Binding here (the socket already listens; connections wait in the backlog) reports a taken port before anything
  // is read; requests are answered only after seek(), once request numbers continue the WAL's.
  Status open() override {
    auto listening = server_.listen(options_.host, options_.port);
    if (!listening) {
      return fail(listening.error().kind,
                  fmt::format("HttpServer source '{}': {} (listen_address)", name_, listening.error().message));
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
    if (!answerer_.joinable()) {
      if (auto st = server_.start(); !st) return st;
      answerer_ = std::thread([this] { answer_committed(); });
      spdlog::info("HttpServer source '{}' listening on {}:{} (ack: {})", name_, options_.host, options_.port,
                   options_.ack == AckMode::kCommitted ? "committed" : "received");
    }
    return ok();
  }

  // Hands over everything buffered; `drained` is always true so the engine cuts the batch at once (group commit:
  // every request that arrived while the previous batch was being committed shares this batch's fsync).
  Result<Poll> poll(const Budget&) override {
    std::unique_lock lock(mu_);
    data_cv_.wait_for(lock, kPollWait, [&] { return buffered_rows_ > 0 || stopping_; });
    Poll result;
    for (auto& [stream, batch] : buffers_) {
      batch.stream = stream;
      if (result.records.rows == 0) {
        result.records = std::move(batch);
      } else {
        result.other_streams.push_back(std::move(batch));
      }
    }
    buffers_.clear();
    buffered_rows_ = buffered_bytes_ = 0;
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
  // A request with `ack: committed` waits here, its connection suspended (no thread held), for its commit.
  struct Waiter {
    uint64_t request = 0;
    size_t rows = 0;
    std::chrono::steady_clock::time_point deadline;
    Pending* pending = nullptr;
  };

  // Refuses what the head already tells, so the body of a request without the token is never kept in memory.
  std::optional<Reply> check_head(const Request& req) const {
    const bool is_healthz = req.path == "/healthz" && (req.method == "GET" || req.method == "HEAD");
    if (!is_healthz && (req.method != "POST" || !http_server::stream_of_path(options_, req.path))) {
      return http_server::error_reply(
          404, options_.streams.empty()
                   ? "not found: records are posted to /ingest"
                   : fmt::format("not found: records are posted to /ingest/<stream>, for the streams {}",
                                 fmt::join(options_.streams, ", ")));
    }
    if (!is_healthz && !options_.auth_token.empty() &&
        !constant_time_equal(req.authorization, "Bearer " + options_.auth_token)) {
      Reply r = http_server::error_reply(401,
                                         "missing or wrong token: send the header 'Authorization: Bearer "
                                         "<auth_token>'");
      r.headers.emplace_back("WWW-Authenticate", "Bearer");
      return r;
    }
    return std::nullopt;
  }

  // Called on a server thread with a complete request that passed check_head(); nullopt holds it until
  // answer_committed() answers it.
  std::optional<Reply> handle(const Request& req, Pending* pending) {
    if (req.path == "/healthz") return healthz();
    const std::string stream = http_server::stream_of_path(options_, req.path).value_or("");
    Batch records;
    if (auto st = append_json_text(req.body, "request body", records); !st) {
      return http_server::error_reply(400, st.error().message + "; nothing from this request was accepted");
    }
    const size_t rows = records.rows;
    uint64_t request = 0;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return busy("the pipeline is stopping");
      const size_t bytes = records.byte_size();
      if (buffered_rows_ > 0 && buffered_bytes_ + bytes > options_.max_buffer_bytes) {
        return busy("the buffer is full (the WAL or the destination is behind)");
      }
      if (auto st = conform_to_seen_types(seen_types_[stream], records); !st) {
        return http_server::error_reply(400, st.error().message + "; nothing from this request was accepted");
      }
      Batch& buffer = buffers_[stream];
      if (buffer.rows == 0) {
        buffer = std::move(records);
      } else if (auto st = buffer.append(records); !st) {
        return http_server::error_reply(400, st.error().message + "; nothing from this request was accepted");
      }
      buffered_rows_ += rows;
      buffered_bytes_ += bytes;
      request = ++last_request_;
      if (options_.ack == AckMode::kCommitted) {
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                   std::chrono::duration<double>(options_.commit_timeout_seconds));
        waiters_.push_back(Waiter{request, rows, deadline, pending});
      }
    }
    data_cv_.notify_one();
    if (options_.ack == AckMode::kCommitted) {
      committed_cv_.notify_all();  // a new earliest deadline, perhaps
      return std::nullopt;
    }
    return accepted(rows, request);
  }

  // Answers waiting requests once committed (200), past commit_timeout_seconds or at stop (503). Requests are
  // numbered and their deadlines set in arrival order, so the ones to answer are always at the front.
  void answer_committed() {
    std::unique_lock lock(mu_);
    while (true) {
      const auto now = std::chrono::steady_clock::now();
      std::vector<std::pair<Pending*, Reply>> ready;
      while (!waiters_.empty()) {
        const Waiter& w = waiters_.front();
        if (committed_request_ >= w.request) {
          ready.emplace_back(w.pending, accepted(w.rows, w.request));
        } else if (stopping_) {
          ready.emplace_back(w.pending, busy("the pipeline is stopping"));
        } else if (now >= w.deadline) {
          // Not known to be committed: the client retries; the records may then land twice, never zero times.
          ready.emplace_back(w.pending, busy("the records were not committed in time"));
        } else {
          break;
        }
        waiters_.pop_front();
      }
      if (!ready.empty()) {
        lock.unlock();
        for (auto& [pending, reply] : ready) server_.answer(pending, std::move(reply));
        lock.lock();
        continue;
      }
      if (stopping_) return;
      if (waiters_.empty()) {
        committed_cv_.wait(lock);
      } else {
        committed_cv_.wait_until(lock, waiters_.front().deadline);
      }
    }
  }

  static Reply accepted(size_t rows, uint64_t request) {
    return Reply{200, fmt::format(R"({{"accepted":{},"request":{}}})", rows, request), {}};
  }

  // Types are fixed by the first record that carries a field (the destination's column has that type by then);
  // an int where a double was seen is widened, anything else is a 400 naming the field.
  static Status conform_to_seen_types(std::map<std::string, Type>& seen_types, Batch& records) {
    for (size_t i = 0; i < records.schema.fields.size(); ++i) {
      Field& field = records.schema.fields[i];
      auto [it, inserted] = seen_types.emplace(field.name, field.type);
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

  Reply healthz() {
    std::lock_guard lock(mu_);
    return Reply{200,
                 fmt::format(R"({{"status":"ok","last_request":{},"committed_request":{},"buffered_rows":{}}})",
                             last_request_, committed_request_, buffered_rows_),
                 {}};
  }

  static Reply busy(const std::string& why) {
    Reply r = http_server::error_reply(503, why + "; retry after 1 second");
    r.headers.emplace_back("Retry-After", "1");
    return r;
  }

  std::string name_;
  Options options_;
  http_server::Server server_;
  std::thread answerer_;  // answer_committed()

  std::mutex mu_;
  std::condition_variable data_cv_;       // a request was buffered
  std::condition_variable committed_cv_;  // committed_request_ moved, a waiter came, or stopping_
  std::deque<Waiter> waiters_;            // in request order
  std::map<std::string, Batch> buffers_;  // per stream ("" without `streams`)
  size_t buffered_rows_ = 0, buffered_bytes_ = 0;
  std::map<std::string, std::map<std::string, Type>> seen_types_;  // per stream
  uint64_t last_request_ = 0;       // requests are numbered in arrival order, continuing the WAL's position
  uint64_t polled_request_ = 0;     // everything up to here was handed to the engine
  uint64_t committed_request_ = 0;  // everything up to here is in the WAL
  bool stopping_ = false;
};

}  // namespace

ConnectorSpec http_server_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "HttpServer";
  spec.is_source = true;
  spec.summary =
      "receives JSON records by HTTP POST /ingest (or /ingest/<stream>, one table each); 200 once committed to the "
      "WAL";
  spec.params = http_server::option_params();
  spec.make_source = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Source>> {
    auto options = http_server::read_options(ctx);
    if (!options) return std::unexpected(options.error());
    return std::make_unique<HttpServerSource>(ctx.name, std::move(*options));
  };
  return spec;
}

}  // namespace skippr
