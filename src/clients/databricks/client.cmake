# the Databricks SQL Statement Execution API and Files API.
skippr_client(databricks
  USES http sql
)
