// One AMQP 0-9-1 connection and channel through rabbitmq-c, in publisher-confirm mode: every message published is
// mandatory (an unroutable one comes back as basic.return instead of vanishing) and is counted until the broker
// acks or nacks it. Errors are typed by what a retry can change: a refused login, vhost or exchange is the user's to
// fix (kConfig); a lost connection or a nack leaves the messages' fate unknown (kUnknownOutcome).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

struct AmqpConfig {
  std::string url;      // amqp://user:password@host:port/vhost or amqps://...; holds a secret
  std::string where;    // names the connector in messages ("sink 'queue'")
  std::string ca_file;  // amqps: the CA that signed the broker's certificate (else the system's)
  double timeout_seconds = 30;
};

struct AmqpHeader {
  std::string name;
  std::string text;  // a string header, or
  int64_t number = 0;
  bool is_number = false;
};

struct AmqpMessage {
  std::string_view exchange;
  std::string_view routing_key;
  std::string_view body;
  std::string_view message_id;
  std::string_view content_type;
  const std::vector<AmqpHeader>* headers = nullptr;
};

struct AmqpConfirms {
  uint64_t acked = 0;
  uint64_t nacked = 0;
  uint64_t returned = 0;          // sent back by the broker: no queue took them
  std::string first_return_text;  // the broker's reason for the first one ("NO_ROUTE")
};

class AmqpConnection {
 public:
  // Connects, logs in, opens channel 1 and selects confirm mode.
  static Result<std::unique_ptr<AmqpConnection>> open(const AmqpConfig& config);
  ~AmqpConnection();
  AmqpConnection(const AmqpConnection&) = delete;
  AmqpConnection& operator=(const AmqpConnection&) = delete;

  // kConfig when the exchange does not exist (a passive declare; the default exchange "" always does).
  Status check_exchange(std::string_view exchange);
  Status declare_exchange(std::string_view exchange, std::string_view type);
  // `queue_type`: classic, quorum or stream (x-queue-type); durable always.
  Status declare_queue(std::string_view queue, std::string_view queue_type);
  Status bind_queue(std::string_view queue, std::string_view exchange, std::string_view routing_key);

  // Publishes one persistent, mandatory message; reads any confirms already waiting so neither side's buffers fill.
  Status publish(const AmqpMessage& message);
  // Waits until every message published since the last call is acked, nacked or returned, for at most the config's
  // timeout (kUnknownOutcome past it). Resets the count.
  Result<AmqpConfirms> wait_for_confirms();

  bool broken() const { return broken_; }

 private:
  AmqpConnection() = default;
  struct State;
  // Reads one frame, waiting at most `wait_seconds` (0: only what is there); false on a timeout.
  Result<bool> read_one(double wait_seconds);
  Status rpc_reply(std::string_view doing);
  Error lost(std::string_view doing, int status);

  std::unique_ptr<State> state_;
  std::string where_;  // "sink 'x': AMQP broker host:port"
  double timeout_seconds_ = 30;
  bool ready_ = false;  // open() finished: the channel is in confirm mode
  bool broken_ = false;
  uint64_t published_ = 0;  // since the last wait_for_confirms
  uint64_t next_tag_ = 1;   // the delivery tag of the next message on this channel
  AmqpConfirms confirms_;
  std::vector<bool> settled_;   // by delivery tag - base_tag_: acked, nacked or returned
  uint64_t base_tag_ = 1;       // the delivery tag of settled_[0]
  size_t first_unsettled_ = 0;  // into settled_: everything before it is settled
};

// The URL as a message may show it: without its password.
std::string amqp_display_url(std::string_view url);

}  // namespace skippr
