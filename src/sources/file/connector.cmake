# File: reads local files and objects in S3, Azure Blob, GCS and SFTP; its SFTP tests start a private sshd.
skippr_connector(File
  KIND source
  SPEC file_source_spec
  HEADER sources/file/file_source.h
  CLIENTS aws azure gcs google sftp
  TEST_DEBIAN openssh-server
  TESTS tests/files tests/object_sources
)
