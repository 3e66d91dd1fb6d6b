# SQL literals shared by the warehouse clients.
skippr_client(sql
)
