# DuckDB's C API, as scripts/install-deps.sh unpacks it from npm into third_party/duckdb.
find_path(DuckDB_INCLUDE_DIR duckdb.h HINTS ${CMAKE_SOURCE_DIR}/third_party/duckdb/include)
find_library(DuckDB_LIBRARY duckdb HINTS ${CMAKE_SOURCE_DIR}/third_party/duckdb/lib)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DuckDB REQUIRED_VARS DuckDB_LIBRARY DuckDB_INCLUDE_DIR)
if(DuckDB_FOUND AND NOT TARGET DuckDB::DuckDB)
  add_library(DuckDB::DuckDB SHARED IMPORTED)
  set_target_properties(DuckDB::DuckDB PROPERTIES IMPORTED_LOCATION ${DuckDB_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${DuckDB_INCLUDE_DIR})
endif()
