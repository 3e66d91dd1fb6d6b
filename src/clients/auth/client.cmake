# JWTs signed with OpenSSL (Snowflake key pairs, Google service accounts).
skippr_client(auth
)
