# AMQP 0-9-1 (rabbitmq-c).
skippr_client(amqp
  PKG_CONFIG librabbitmq
  DEBIAN librabbitmq-dev
)
