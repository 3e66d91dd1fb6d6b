# SFTP over libssh.
skippr_client(sftp
  PKG_CONFIG libssh
  DEBIAN libssh-dev
)
