// AMQP 0-9-1 (RabbitMQ): each row (message_per: row) or each batch (message_per: batch) is one persistent message,
// published mandatory with publisher confirms. A batch has landed when the broker confirmed every message of it; a
// nack, a lost connection or a confirm that does not come is an unknown outcome, and the batch is published again
// with the same message ids (BatchId, or BatchId/row). At least once: a consumer that drops a message_id it has seen
// gets every row exactly once. An unroutable message (no queue bound) stops the run instead of vanishing.
#pragma once

#include "core/connector.h"

namespace skippr {
ConnectorSpec amqp_sink_spec();
}
