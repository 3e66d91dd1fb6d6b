# SFTP: the tests start a private sshd.
skippr_connector(SFTP
  KIND sink
  SPEC sftp_sink_spec
  HEADER sinks/sftp/sftp_sink.h
  CLIENTS sftp
  TEST_DEBIAN openssh-server
  TESTS tests/objectstores
)
