#include "sinks/amqp/amqp_sink.h"

#include <fmt/format.h>

#include <set>

#include "clients/amqp/amqp_connection.h"
#include "core/failpoint.h"
#include "formats/json_rows.h"
#include "formats/object_encoding.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

enum class MessagePer { kRow, kBatch };

// What the sink declares when asked (`declare:`); nothing otherwise, so it never creates a topology by mistake.
struct Declarations {
  std::string exchange_type;  // set: declare the exchange (durable) with this type
  std::string queue;          // set: declare this durable queue and bind it with the routing key
  std::string queue_type = "classic";
};

// AMQP's routing key and message id are short strings: at most 255 bytes.
constexpr size_t kRoutingKeyBytes = 255;

class AmqpSink final : public Sink {
 public:
  // `routing_key` may hold {stream} (each stream's name, as it is); `source_streams`: every message names its stream
  // in the x-skippr-stream header, and its id holds the stream (a batch's streams number their rows each from 0).
  AmqpSink(AmqpConfig config, std::string exchange, std::string routing_key, MessagePer per,
           std::optional<ObjectEncoder> encoder, Declarations declare, bool source_streams)
      : config_(std::move(config)),
        exchange_(std::move(exchange)),
        routing_key_(std::move(routing_key)),
        per_(per),
        encoder_(std::move(encoder)),
        declare_(std::move(declare)),
        source_streams_(source_streams) {}

  Guarantee guarantee() const override { return Guarantee::kAtLeastOnce; }

  Status open() override {
    auto connection = AmqpConnection::open(config_);
    if (!connection) return std::unexpected(connection.error());
    connection_ = std::move(*connection);
    if (!declare_.exchange_type.empty() && !exchange_.empty()) {
      SKIPPR_TRY(connection_->declare_exchange(exchange_, declare_.exchange_type));
    } else {
      SKIPPR_TRY(connection_->check_exchange(exchange_));
    }
    bound_.clear();
    if (!declare_.queue.empty()) {
      SKIPPR_TRY(connection_->declare_queue(declare_.queue, declare_.queue_type));
      if (!per_stream_key()) SKIPPR_TRY(bind(routing_key_));
    }
    return ok();
  }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position&) override {
    if (!connection_ || connection_->broken()) {
      connection_.reset();
      SKIPPR_TRY(open());
    }
    auto published = publish(batch, id);
    if (!published) {
      if (connection_ && connection_->broken()) connection_.reset();  // the next attempt starts on a new channel
      return std::unexpected(published.error());
    }
    return WriteOutcome::kApplied;
  }

 private:
  bool per_stream_key() const { return routing_key_.find(kStreamPlaceholder) != std::string::npos; }

  // The declared queue bound to `key` on the exchange, once per connection (a bind is idempotent on the broker).
  Status bind(const std::string& key) {
    if (declare_.queue.empty() || exchange_.empty() || bound_.contains(key)) return ok();
    SKIPPR_TRY(connection_->bind_queue(declare_.queue, exchange_, key));
    bound_.insert(key);
    return ok();
  }

  Result<std::string> routing_key_of(const std::string& stream) const {
    std::string key = routing_key_;
    for (size_t at; (at = key.find(kStreamPlaceholder)) != std::string::npos;) {
      key.replace(at, kStreamPlaceholder.size(), stream);
    }
    if (key.size() > kRoutingKeyBytes) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the routing key of stream '{}' is {} bytes, above AMQP's {}; "
                                                  "shorten routing_key or the stream's name",
                                                  config_.where, stream, key.size(), kRoutingKeyBytes));
    }
    return key;
  }

  Status publish(const Batch& batch, const BatchId& id) {
    const std::string batch_id = id.str();
    // Ids unique across a batch's streams: <batch>/<stream>[/<row>]. One stream keeps the form it always had.
    const std::string id_prefix = source_streams_ ? fmt::format("{}/{}", batch_id, batch.stream) : batch_id;
    // message_id is a short string too: room for "/<row>" after the prefix.
    if (id_prefix.size() + 1 + std::to_string(batch.rows).size() > kRoutingKeyBytes) {
      return fail(ErrorKind::kConfig, fmt::format("{}: the message ids of stream '{}' would be longer than AMQP's {} "
                                                  "bytes; shorten the stream's name (or the pipeline's)",
                                                  config_.where, batch.stream, kRoutingKeyBytes));
    }
    auto key = routing_key_of(batch.stream);
    if (!key) return std::unexpected(key.error());
    SKIPPR_TRY(bind(*key));
    headers_ = {{"x-skippr-batch-id", batch_id, 0, false},
                {"x-skippr-rows", "", static_cast<int64_t>(batch.rows), true}};
    if (source_streams_) headers_.push_back({"x-skippr-stream", batch.stream, 0, false});
    AmqpMessage message;
    message.exchange = exchange_;
    message.routing_key = *key;
    message.headers = &headers_;
    failpoint::hit(failpoint::kSinkInTransaction);
    if (per_ == MessagePer::kBatch) {
      auto body = encoder_->encode(batch);
      if (!body) return std::unexpected(body.error());
      message.body = *body;
      message.message_id = id_prefix;
      message.content_type = encoder_->encoding().content_type();
      SKIPPR_TRY(connection_->publish(message));
    } else {
      headers_.push_back({"x-skippr-row", "", 0, true});
      message.content_type = "application/json";
      std::string message_id;
      for (size_t row = 0; row < batch.rows; ++row) {
        body_.clear();
        append_row_json(batch, row, body_);
        message_id = fmt::format("{}/{}", id_prefix, row);
        headers_.back().number = static_cast<int64_t>(row);
        message.body = body_;
        message.message_id = message_id;
        SKIPPR_TRY(connection_->publish(message));
      }
    }
    auto confirms = connection_->wait_for_confirms();
    if (!confirms) return std::unexpected(confirms.error());
    if (confirms->returned > 0) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: the broker returned {} message(s) of batch {} as unroutable ({}): no queue is "
                              "bound to exchange '{}' for routing key '{}'; bind one, or let the sink declare it "
                              "(declare: {{ queue: <name> }})",
                              config_.where, confirms->returned, batch_id, confirms->first_return_text,
                              exchange_.empty() ? "(default)" : exchange_, *key));
    }
    if (confirms->nacked > 0) {
      return fail(ErrorKind::kUnknownOutcome, fmt::format("{}: the broker nacked {} message(s) of batch {}; it is "
                                                          "published again with the same message ids",
                                                          config_.where, confirms->nacked, batch_id));
    }
    failpoint::hit(failpoint::kSinkAfterCommit);
    return ok();
  }

  AmqpConfig config_;
  std::string exchange_, routing_key_;
  MessagePer per_;
  std::optional<ObjectEncoder> encoder_;  // message_per: batch
  Declarations declare_;
  std::unique_ptr<AmqpConnection> connection_;
  bool source_streams_;
  std::set<std::string> bound_;  // routing keys the declared queue is bound to on this connection
  std::vector<AmqpHeader> headers_;
  std::string body_;
};

}  // namespace

ConnectorSpec amqp_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "AMQP";
  spec.is_source = false;
  spec.summary =
      "an AMQP 0-9-1 exchange (RabbitMQ): persistent messages with publisher confirms, message_id from the "
      "BatchId";
  spec.guarantee = Guarantee::kAtLeastOnce;
  // Each stream under its own routing key ({stream} in routing_key), or all under one, each message naming its stream.
  spec.lands_streams = true;
  spec.params = {
      {"url", ParamType::kString, true, nullptr,
       "amqp://user:password@host:port/vhost (or amqps://); give the password as ${VAR}"},
      {"exchange", ParamType::kString, false, "", "the exchange to publish to; empty: the default exchange"},
      {"routing_key", ParamType::kString, false, "",
       "the routing key (with the default exchange: the queue's name). With a source of several streams it may hold "
       "{stream}, each stream's name (raw.{stream}); every message names its stream in the x-skippr-stream header"},
      {"message_per", ParamType::kString, false, "row", "row: one JSON message per row; batch: one per batch"},
      {"format", ParamType::kString, false, "json",
       "json (row: a JSON object; batch: JSON lines), or with message_per batch: jsonl, csv, parquet"},
      {"compression", ParamType::kString, false, "auto",
       "message_per batch: auto, none, gzip or zstd (as the File sink)"},
      {"declare", ParamType::kStringMap, false, nullptr,
       "declare what is missing: exchange_type (direct, topic, fanout, headers), queue, queue_type (classic, quorum, "
       "stream)"},
      {"ca_file", ParamType::kPath, false, nullptr, "amqps: the CA certificate that signed the broker's"},
      {"confirm_timeout_seconds", ParamType::kDouble, false, 60.0,
       "how long to wait for the broker's confirms of a batch before publishing it again"},
  };
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string where = fmt::format("sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("{}: landing {} is not supported by AMQP (at least once); use append",
                                                  where, to_string(ctx.landing)));
    }
    AmqpConfig config;
    config.url = ctx.params.value("url", std::string());
    config.where = where;
    config.ca_file = ctx.params.value("ca_file", std::string());
    config.timeout_seconds = ctx.params.value("confirm_timeout_seconds", 60.0);
    if (!config.url.starts_with("amqp://") && !config.url.starts_with("amqps://")) {
      return fail(ErrorKind::kConfig, fmt::format("{}: url must start with amqp:// or amqps:// "
                                                  "(amqp://user:password@host:port/vhost)",
                                                  where));
    }
    if (config.timeout_seconds <= 0) {
      return fail(ErrorKind::kConfig, fmt::format("{}: confirm_timeout_seconds must be positive", where));
    }
    const std::string exchange = ctx.params.value("exchange", std::string());
    const std::string routing_key = ctx.params.value("routing_key", std::string());
    if (exchange.empty() && routing_key.empty()) {
      return fail(ErrorKind::kConfig, fmt::format("{}: with the default exchange, routing_key must name the queue; "
                                                  "set routing_key (or an exchange)",
                                                  where));
    }
    const std::string per_text = ctx.params.value("message_per", std::string("row"));
    if (per_text != "row" && per_text != "batch") {
      return fail(ErrorKind::kConfig, fmt::format("{}: message_per is '{}'; it must be row or batch", where, per_text));
    }
    const MessagePer per = per_text == "row" ? MessagePer::kRow : MessagePer::kBatch;
    std::string format = ctx.params.value("format", std::string("json"));
    std::optional<ObjectEncoder> encoder;
    if (per == MessagePer::kRow) {
      if (format != "json") {
        return fail(ErrorKind::kConfig, fmt::format("{}: format '{}' needs message_per: batch; one row per message is "
                                                    "always a JSON object (format: json)",
                                                    where, format));
      }
    } else {
      nlohmann::json encoding_params = ctx.params;
      if (format == "json") encoding_params["format"] = "jsonl";
      auto encoding = read_object_encoding(encoding_params, where);
      if (!encoding) return std::unexpected(encoding.error());
      encoder.emplace(*encoding, ctx.pipeline_dir);
    }
    Declarations declare;
    if (auto d = ctx.params.find("declare"); d != ctx.params.end() && d->is_object()) {
      for (const auto& [key, value] : d->items()) {
        const std::string v = value.is_string() ? value.get<std::string>() : value.dump();
        if (key == "exchange_type") {
          if (v != "direct" && v != "topic" && v != "fanout" && v != "headers") {
            return fail(ErrorKind::kConfig, fmt::format("{}: declare.exchange_type is '{}'; it must be direct, topic, "
                                                        "fanout or headers",
                                                        where, v));
          }
          if (exchange.empty()) {
            return fail(ErrorKind::kConfig,
                        fmt::format("{}: declare.exchange_type needs an exchange name (exchange:)", where));
          }
          declare.exchange_type = v;
        } else if (key == "queue") {
          declare.queue = v;
        } else if (key == "queue_type") {
          if (v != "classic" && v != "quorum" && v != "stream") {
            return fail(ErrorKind::kConfig,
                        fmt::format("{}: declare.queue_type is '{}'; it must be classic, quorum or stream", where, v));
          }
          declare.queue_type = v;
        } else {
          return fail(ErrorKind::kConfig, fmt::format("{}: declare has no key '{}'; it takes exchange_type, queue and "
                                                      "queue_type",
                                                      where, key));
        }
      }
    }
    if (routing_key.find(kStreamPlaceholder) != std::string::npos && !ctx.source_streams) {
      return fail(ErrorKind::kConfig, fmt::format("{}: routing_key '{}' holds {{stream}}, and the pipeline's source "
                                                  "names one stream; name the routing key, or give the source several "
                                                  "streams",
                                                  where, routing_key));
    }
    return std::make_unique<AmqpSink>(std::move(config), exchange, routing_key, per, std::move(encoder),
                                      std::move(declare), ctx.source_streams);
  };
  return spec;
}

}  // namespace skippr
