#include "clients/amqp/amqp_connection.h"

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <fmt/format.h>
#include <sys/time.h>

#include <chrono>
#include <cmath>

#include "core/redact.h"

namespace skippr {

struct AmqpConnection::State {
  amqp_connection_state_t conn = nullptr;
  std::string password;  // for redaction
  ~State() {
    if (conn) amqp_destroy_connection(conn);
  }
};

namespace {

constexpr amqp_channel_t kChannel = 1;
constexpr size_t kDrainEvery = 64;  // publishes between non-blocking reads of the broker's confirms

amqp_bytes_t bytes(std::string_view text) { return {text.size(), const_cast<char*>(text.data())}; }
std::string text(amqp_bytes_t b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

timeval to_timeval(double seconds) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - std::floor(seconds)) * 1e6);
  return tv;
}

// What a broker's close says, and whether a retry can change it (403 ACCESS_REFUSED, 404 NOT_FOUND, 530 NOT_ALLOWED,
// 406 PRECONDITION_FAILED are the user's to fix).
bool is_config_reply(uint16_t code) { return code == 403 || code == 404 || code == 530 || code == 406 || code == 402; }

}  // namespace

std::string amqp_display_url(std::string_view url) {
  // amqp://user:password@host/ -> amqp://user:***@host/
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return std::string(url);
  const size_t at = url.find('@', scheme + 3);
  const size_t colon = url.find(':', scheme + 3);
  if (at == std::string_view::npos || colon == std::string_view::npos || colon > at) return std::string(url);
  return fmt::format("{}{}{}", url.substr(0, colon + 1), kRedacted, url.substr(at));
}

Result<std::unique_ptr<AmqpConnection>> AmqpConnection::open(const AmqpConfig& config) {
  std::string url = config.url;
  amqp_connection_info info;
  amqp_default_connection_info(&info);
  const std::string shown = amqp_display_url(config.url);
  if (amqp_parse_url(url.data(), &info) != AMQP_STATUS_OK) {
    return fail(ErrorKind::kConfig, fmt::format("{}: url {} is not an AMQP URL; write "
                                                "amqp://user:password@host:port/vhost (or amqps://)",
                                                config.where, shown));
  }
  std::unique_ptr<AmqpConnection> c(new AmqpConnection());
  c->state_ = std::make_unique<State>();
  c->state_->password = info.password ? info.password : "";
  c->state_->conn = amqp_new_connection();
  amqp_connection_state_t conn = c->state_->conn;
  const std::string peer = fmt::format("{}: AMQP broker {}:{}", config.where, info.host, info.port);
  amqp_socket_t* socket = info.ssl ? amqp_ssl_socket_new(conn) : amqp_tcp_socket_new(conn);
  if (!socket) return fail(ErrorKind::kInternal, fmt::format("{}: cannot create a socket", peer));
  if (info.ssl) {
    amqp_ssl_socket_set_verify_peer(socket, 1);
    amqp_ssl_socket_set_verify_hostname(socket, 1);
    if (!config.ca_file.empty() && amqp_ssl_socket_set_cacert(socket, config.ca_file.c_str()) != AMQP_STATUS_OK) {
      return fail(ErrorKind::kConfig, fmt::format("{}: cannot read ca_file {}", config.where, config.ca_file));
    }
  }
  timeval timeout = to_timeval(config.timeout_seconds);
  if (int st = amqp_socket_open_noblock(socket, info.host, info.port, &timeout); st != AMQP_STATUS_OK) {
    // A certificate we do not trust, or one for another name, stays so on every retry: the setup is wrong.
    if (st == AMQP_STATUS_SSL_PEER_VERIFY_FAILED || st == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: the broker's TLS certificate is not trusted ({}); give the CA that signed it as "
                              "ca_file, and the host name the certificate names in the url",
                              peer, amqp_error_string2(st)));
    }
    return fail(ErrorKind::kUnavailable, fmt::format("{}: cannot connect: {}", peer, amqp_error_string2(st)));
  }
  amqp_set_rpc_timeout(conn, &timeout);
  amqp_set_handshake_timeout(conn, &timeout);
  c->where_ = peer;
  c->timeout_seconds_ = config.timeout_seconds;
  // "amqp://host/" parses to the empty vhost; nobody means that, RabbitMQ's default "/" is what they mean.
  const char* vhost = info.vhost && *info.vhost ? info.vhost : "/";
  const amqp_rpc_reply_t login =
      amqp_login(conn, vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, info.user, info.password);
  if (login.reply_type != AMQP_RESPONSE_NORMAL) {
    // RabbitMQ closes a refused login with 403 ACCESS_REFUSED (or just drops the socket on old versions) and a
    // vhost the user may not open with 530 NOT_ALLOWED.
    if (login.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && login.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      auto* close = static_cast<amqp_connection_close_t*>(login.reply.decoded);
      const std::string reason = redact(text(close->reply_text), {c->state_->password});
      return fail(is_config_reply(close->reply_code) ? ErrorKind::kConfig : ErrorKind::kUnavailable,
                  fmt::format("{} refused the connection to vhost '{}' ({} {}); check the url's user, password and "
                              "vhost",
                              peer, vhost, close->reply_code, reason));
    }
    if (login.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && login.library_error == AMQP_STATUS_CONNECTION_CLOSED) {
      return fail(ErrorKind::kConfig, fmt::format("{} closed the connection during login; check the url's user, "
                                                  "password and vhost",
                                                  peer));
    }
    return fail(ErrorKind::kUnavailable,
                fmt::format("{}: login failed: {}", peer, amqp_error_string2(login.library_error)));
  }
  amqp_channel_open(conn, kChannel);
  SKIPPR_TRY(c->rpc_reply("opening a channel"));
  amqp_confirm_select(conn, kChannel);
  SKIPPR_TRY(c->rpc_reply("selecting publisher confirms"));
  c->ready_ = true;
  return c;
}

AmqpConnection::~AmqpConnection() {
  // A connection that never opened fully (a refused login) has nothing to close politely, and waiting for a
  // close-ok there would only take the RPC timeout.
  if (state_ && state_->conn && ready_ && !broken_) {
    amqp_channel_close(state_->conn, kChannel, AMQP_REPLY_SUCCESS);
    amqp_connection_close(state_->conn, AMQP_REPLY_SUCCESS);
  }
}

Error AmqpConnection::lost(std::string_view doing, int status) {
  broken_ = true;
  return {ErrorKind::kUnknownOutcome,
          fmt::format("{}: connection lost while {}: {}", where_, doing, amqp_error_string2(status))};
}

Status AmqpConnection::rpc_reply(std::string_view doing) {
  const amqp_rpc_reply_t reply = amqp_get_rpc_reply(state_->conn);
  if (reply.reply_type == AMQP_RESPONSE_NORMAL) return ok();
  broken_ = true;
  if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION) {
    uint16_t code = 0;
    std::string reason;
    if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
      auto* close = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
      code = close->reply_code;
      reason = text(close->reply_text);
    } else if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
      auto* close = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
      code = close->reply_code;
      reason = text(close->reply_text);
    }
    return fail(
        is_config_reply(code) ? ErrorKind::kConfig : ErrorKind::kUnavailable,
        fmt::format("{}: the broker refused {} ({} {})", where_, doing, code, redact(reason, {state_->password})));
  }
  return fail(ErrorKind::kUnavailable,
              fmt::format("{}: {} failed: {}", where_, doing, amqp_error_string2(reply.library_error)));
}

Status AmqpConnection::check_exchange(std::string_view exchange) {
  if (exchange.empty()) return ok();
  amqp_exchange_declare(state_->conn, kChannel, bytes(exchange), bytes("direct"), /*passive=*/1, /*durable=*/0,
                        /*auto_delete=*/0, /*internal=*/0, amqp_empty_table);
  auto st = rpc_reply(fmt::format("to find exchange '{}'", exchange));
  if (!st && st.error().kind == ErrorKind::kConfig) {
    return fail(ErrorKind::kConfig, fmt::format("{}: exchange '{}' does not exist on this vhost; create it, or let "
                                                "the sink declare it (declare: {{ exchange_type: direct }})",
                                                where_, exchange));
  }
  return st;
}

Status AmqpConnection::declare_exchange(std::string_view exchange, std::string_view type) {
  amqp_exchange_declare(state_->conn, kChannel, bytes(exchange), bytes(type), 0, /*durable=*/1, 0, 0, amqp_empty_table);
  return rpc_reply(fmt::format("declaring exchange '{}' of type {}", exchange, type));
}

Status AmqpConnection::declare_queue(std::string_view queue, std::string_view queue_type) {
  amqp_table_entry_t entry;
  entry.key = bytes("x-queue-type");
  entry.value.kind = AMQP_FIELD_KIND_UTF8;
  entry.value.value.bytes = bytes(queue_type);
  const amqp_table_t arguments{1, &entry};
  amqp_queue_declare(state_->conn, kChannel, bytes(queue), 0, /*durable=*/1, /*exclusive=*/0, /*auto_delete=*/0,
                     arguments);
  return rpc_reply(fmt::format("declaring {} queue '{}'", queue_type, queue));
}

Status AmqpConnection::bind_queue(std::string_view queue, std::string_view exchange, std::string_view routing_key) {
  amqp_queue_bind(state_->conn, kChannel, bytes(queue), bytes(exchange), bytes(routing_key), amqp_empty_table);
  return rpc_reply(fmt::format("binding queue '{}' to exchange '{}'", queue, exchange));
}

Status AmqpConnection::publish(const AmqpMessage& message) {
  if (broken_) return fail(ErrorKind::kUnavailable, fmt::format("{}: the connection is closed", where_));
  std::vector<amqp_table_entry_t> entries;
  if (message.headers) {
    for (const auto& h : *message.headers) {
      amqp_table_entry_t e;
      e.key = bytes(h.name);
      if (h.is_number) {
        e.value.kind = AMQP_FIELD_KIND_I64;
        e.value.value.i64 = h.number;
      } else {
        e.value.kind = AMQP_FIELD_KIND_UTF8;
        e.value.value.bytes = bytes(h.text);
      }
      entries.push_back(e);
    }
  }
  amqp_basic_properties_t props;
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_HEADERS_FLAG |
                 AMQP_BASIC_CONTENT_TYPE_FLAG;
  props.delivery_mode = AMQP_DELIVERY_PERSISTENT;
  props.message_id = bytes(message.message_id);
  props.content_type = bytes(message.content_type);
  props.headers = {static_cast<int>(entries.size()), entries.data()};
  const int st = amqp_basic_publish(state_->conn, kChannel, bytes(message.exchange), bytes(message.routing_key),
                                    /*mandatory=*/1, /*immediate=*/0, &props, bytes(message.body));
  if (st != AMQP_STATUS_OK) return std::unexpected(lost("publishing", st));
  ++published_;
  settled_.push_back(false);
  ++next_tag_;
  if (published_ % kDrainEvery == 0) {
    while (true) {
      auto read = read_one(0);
      if (!read) return std::unexpected(read.error());
      if (!*read) break;
    }
  }
  return ok();
}

Result<bool> AmqpConnection::read_one(double wait_seconds) {
  amqp_frame_t frame;
  timeval tv = to_timeval(wait_seconds);
  const int st = amqp_simple_wait_frame_noblock(state_->conn, &frame, &tv);
  if (st == AMQP_STATUS_TIMEOUT) return false;
  if (st != AMQP_STATUS_OK) return std::unexpected(lost("waiting for the broker's confirms", st));
  if (frame.frame_type != AMQP_FRAME_METHOD) return true;
  auto settle = [&](uint64_t tag, bool multiple, bool acked) {
    if (tag < base_tag_) return;  // a late confirm of an earlier batch's message (cannot happen: it waited)
    const uint64_t first = multiple ? base_tag_ + first_unsettled_ : tag;
    for (uint64_t t = first; t <= tag && t - base_tag_ < settled_.size(); ++t) {
      if (settled_[t - base_tag_]) continue;
      settled_[t - base_tag_] = true;
      (acked ? confirms_.acked : confirms_.nacked) += 1;
    }
    while (first_unsettled_ < settled_.size() && settled_[first_unsettled_]) ++first_unsettled_;
  };
  switch (frame.payload.method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
      settle(ack->delivery_tag, ack->multiple, true);
      break;
    }
    case AMQP_BASIC_NACK_METHOD: {
      auto* nack = static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded);
      settle(nack->delivery_tag, nack->multiple, false);
      break;
    }
    case AMQP_BASIC_RETURN_METHOD: {
      // The returned message's header and body follow; the broker acks it after (it was handled: dropped).
      auto* ret = static_cast<amqp_basic_return_t*>(frame.payload.method.decoded);
      if (confirms_.returned++ == 0) {
        confirms_.first_return_text = fmt::format("{} {}", ret->reply_code, text(ret->reply_text));
      }
      amqp_message_t returned;
      const amqp_rpc_reply_t r = amqp_read_message(state_->conn, frame.channel, &returned, 0);
      if (r.reply_type != AMQP_RESPONSE_NORMAL) return std::unexpected(lost("reading a returned message", 0));
      amqp_destroy_message(&returned);
      break;
    }
    case AMQP_CHANNEL_CLOSE_METHOD:
    case AMQP_CONNECTION_CLOSE_METHOD: {
      const bool channel = frame.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD;
      uint16_t code = 0;
      std::string reason;
      if (channel) {
        auto* close = static_cast<amqp_channel_close_t*>(frame.payload.method.decoded);
        code = close->reply_code;
        reason = text(close->reply_text);
      } else {
        auto* close = static_cast<amqp_connection_close_t*>(frame.payload.method.decoded);
        code = close->reply_code;
        reason = text(close->reply_text);
      }
      broken_ = true;
      // A publish to a missing exchange closes the channel with 404: nothing after it was taken.
      return fail(is_config_reply(code) ? ErrorKind::kConfig : ErrorKind::kUnknownOutcome,
                  fmt::format("{}: the broker closed the {} ({} {})", where_, channel ? "channel" : "connection", code,
                              redact(reason, {state_->password})));
    }
    default:
      break;
  }
  amqp_maybe_release_buffers(state_->conn);
  return true;
}

Result<AmqpConfirms> AmqpConnection::wait_for_confirms() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds_);
  auto settled = [&] { return confirms_.acked + confirms_.nacked; };
  while (settled() < published_) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      broken_ = true;  // late confirms must not count for the next batch: the caller reconnects
      return fail(ErrorKind::kUnknownOutcome, fmt::format("{}: {} of {} messages not confirmed within {} s", where_,
                                                          published_ - settled(), published_, timeout_seconds_));
    }
    auto read = read_one(left);
    if (!read) return std::unexpected(read.error());
  }
  AmqpConfirms done = confirms_;
  confirms_ = {};
  base_tag_ = next_tag_;
  settled_.clear();
  first_unsettled_ = 0;
  published_ = 0;
  return done;
}

}  // namespace skippr
