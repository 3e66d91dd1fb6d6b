# AMQP: the tests start RabbitMQ.
skippr_connector(AMQP
  KIND sink
  SPEC amqp_sink_spec
  HEADER sinks/amqp/amqp_sink.h
  CLIENTS amqp
  TEST_DEBIAN rabbitmq-server amqp-tools
  TESTS tests/amqp
)
