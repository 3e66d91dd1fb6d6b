# Kafka: librdkafka (its mock cluster serves the tests); kcat is the peer bench/kafka.sh compares a read with.
skippr_connector(Kafka
  KIND source
  SPEC kafka_source_spec
  HEADER sources/kafka/kafka_source.h
  PKG_CONFIG rdkafka
  DEBIAN librdkafka-dev
  TEST_DEBIAN kcat
  TESTS tests/streaming
)
