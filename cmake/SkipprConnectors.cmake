# Connectors and clients declare themselves: each src/sources/<folder>/ and src/sinks/<folder>/ holds a
# connector.cmake, each src/clients/<folder>/ a client.cmake. From those declarations this file
#   - makes a build option per connector (SKIPPR_SOURCE_<TYPE> / SKIPPR_SINK_<TYPE>, ON by default),
#   - compiles a connector's folder only when one of its connectors is on, and a client's folder only when the core
#     or an enabled connector uses it (so `-DSKIPPR_SINK_AMQP=OFF` needs no librabbitmq),
#   - finds the pkg-config modules of what is compiled,
#   - writes the registry (build/generated/connector_registry.cc) and a manifest of what this build has.
# scripts/install-deps.sh reads the same declarations for the Debian packages, so a connector's packages are written
# once, beside its code. The declarations take one keyword per line (install-deps.sh reads them with sed):
#
#   skippr_connector(<Type>             the YAML type name, as its spec's type_name
#     KIND source|sink
#     SPEC <function>                   returns its ConnectorSpec
#     HEADER <path under src/>          declares SPEC
#     CLIENTS <client>...               the src/clients/ folders it includes
#     PKG_CONFIG <module>...            libraries it links itself (not through a client)
#     DEBIAN <package>...               the -dev packages of those (installed by `make run`)
#     TEST_DEBIAN <package>...          what its tests need: servers, tools (installed by `make test`)
#     TESTS <folder>...                 where its tests are (tests/<area>)
#     DOC <path>                        its page (default docs/connectors/<Type>.md)
#   )
#   skippr_client(<folder>
#     CORE                              the engine, WAL, state or formats use it: always compiled
#     USES <client>...                  other clients it includes
#     PKG_CONFIG <module>...
#     DEBIAN <package>...
#   )

set(_SKIPPR_CONNECTOR_KEYWORDS KIND SPEC HEADER DOC)
set(_SKIPPR_CONNECTOR_LISTS CLIENTS PKG_CONFIG DEBIAN TEST_DEBIAN TESTS)

function(skippr_connector type)
  cmake_parse_arguments(PARSE_ARGV 1 C "" "${_SKIPPR_CONNECTOR_KEYWORDS}" "${_SKIPPR_CONNECTOR_LISTS}")
  if(C_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${SKIPPR_DECLARING}: skippr_connector(${type}): unknown arguments ${C_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT C_KIND MATCHES "^(source|sink)$" OR NOT C_SPEC OR NOT C_HEADER)
    message(FATAL_ERROR "${SKIPPR_DECLARING}: skippr_connector(${type}) needs KIND source|sink, SPEC and HEADER")
  endif()
  get_filename_component(folder "${SKIPPR_DECLARING}" DIRECTORY)
  # A source and a sink may share a type name (File, Postgres): a connector is its kind and its type.
  set(id ${C_KIND}_${type})
  set_property(GLOBAL APPEND PROPERTY SKIPPR_CONNECTORS ${id})
  foreach(key KIND SPEC HEADER CLIENTS PKG_CONFIG)
    set_property(GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_${key} "${C_${key}}")
  endforeach()
  set_property(GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_TYPE "${type}")
  set_property(GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_FOLDER "${folder}")
endfunction()

function(skippr_client name)
  cmake_parse_arguments(PARSE_ARGV 1 C "CORE" "" "USES;PKG_CONFIG;DEBIAN")
  if(C_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${SKIPPR_DECLARING}: skippr_client(${name}): unknown arguments ${C_UNPARSED_ARGUMENTS}")
  endif()
  set_property(GLOBAL APPEND PROPERTY SKIPPR_CLIENTS ${name})
  set_property(GLOBAL PROPERTY SKIPPR_CLIENT_${name}_CORE ${C_CORE})
  set_property(GLOBAL PROPERTY SKIPPR_CLIENT_${name}_USES "${C_USES}")
  set_property(GLOBAL PROPERTY SKIPPR_CLIENT_${name}_PKG_CONFIG "${C_PKG_CONFIG}")
endfunction()

# The option's name of a connector (source_Postgres): SKIPPR_SOURCE_POSTGRES; AthenaIceberg: SKIPPR_SINK_ATHENAICEBERG.
function(skippr_connector_option out id)
  string(TOUPPER "${id}" upper)
  set(${out} SKIPPR_${upper} PARENT_SCOPE)
endfunction()

# Reads every declaration and sets, in the caller's scope:
#   SKIPPR_ENABLED_CONNECTORS   connectors (<kind>_<type>) whose option is on
#   SKIPPR_ALL_CONNECTORS_ON    TRUE when none is off (the tests need every connector)
#   SKIPPR_EXCLUDED_DIRS        folders under src/ not to compile (connectors off, clients nobody uses)
#   SKIPPR_CONNECTOR_LIBRARIES  the imported targets of the pkg-config modules of what is compiled
function(skippr_load_connectors)
  file(GLOB declarations CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/clients/*/client.cmake
       ${CMAKE_SOURCE_DIR}/src/sources/*/connector.cmake ${CMAKE_SOURCE_DIR}/src/sinks/*/connector.cmake)
  list(SORT declarations)
  foreach(declaration ${declarations})
    set(SKIPPR_DECLARING ${declaration})
    include(${declaration})
  endforeach()
  get_property(connectors GLOBAL PROPERTY SKIPPR_CONNECTORS)
  get_property(clients GLOBAL PROPERTY SKIPPR_CLIENTS)

  set(enabled "")
  set(all_on TRUE)
  set(used_clients "")
  set(modules "")
  set(folders_on "")
  set(folders_all "")
  foreach(id ${connectors})
    skippr_connector_option(opt ${id})
    string(REPLACE "_" " " what "${id}")
    option(${opt} "Build the ${what} connector" ON)
    get_property(folder GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_FOLDER)
    list(APPEND folders_all ${folder})
    if(${opt})
      list(APPEND enabled ${id})
      list(APPEND folders_on ${folder})
      get_property(c GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_CLIENTS)
      get_property(m GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_PKG_CONFIG)
      list(APPEND used_clients ${c})
      list(APPEND modules ${m})
    else()
      set(all_on FALSE)
    endif()
  endforeach()
  foreach(client ${clients})
    get_property(core GLOBAL PROPERTY SKIPPR_CLIENT_${client}_CORE)
    if(core)
      list(APPEND used_clients ${client})
    endif()
  endforeach()
  # What a used client uses is used too (bigquery -> google -> auth): a fixed point over USES.
  set(closure "")
  while(used_clients)
    list(POP_FRONT used_clients client)
    if(client IN_LIST closure)
      continue()
    endif()
    if(NOT client IN_LIST clients)
      message(FATAL_ERROR "a declaration uses client '${client}', which has no src/clients/${client}/client.cmake")
    endif()
    list(APPEND closure ${client})
    get_property(u GLOBAL PROPERTY SKIPPR_CLIENT_${client}_USES)
    get_property(m GLOBAL PROPERTY SKIPPR_CLIENT_${client}_PKG_CONFIG)
    list(APPEND used_clients ${u})
    list(APPEND modules ${m})
  endwhile()

  set(excluded "")
  list(REMOVE_DUPLICATES folders_all)
  foreach(folder ${folders_all})
    if(NOT folder IN_LIST folders_on)
      list(APPEND excluded ${folder})
    endif()
  endforeach()
  foreach(client ${clients})
    if(NOT client IN_LIST closure)
      list(APPEND excluded ${CMAKE_SOURCE_DIR}/src/clients/${client})
    endif()
  endforeach()

  # One imported target per module (PkgConfig::<module>, with what is not a C identifier made _).
  set(libraries "")
  list(REMOVE_DUPLICATES modules)
  foreach(module ${modules})
    string(MAKE_C_IDENTIFIER "${module}" prefix)
    string(TOUPPER "SKIPPR_PC_${prefix}" prefix)
    pkg_check_modules(${prefix} REQUIRED IMPORTED_TARGET ${module})
    list(APPEND libraries PkgConfig::${prefix})
  endforeach()

  # The registry: one include and one line per enabled connector, sources first, each kind by type name.
  set(includes "")
  set(lines "")
  foreach(kind source sink)
    set(of_kind "")
    foreach(id ${enabled})
      get_property(k GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_KIND)
      if(k STREQUAL kind)
        list(APPEND of_kind ${id})
      endif()
    endforeach()
    list(SORT of_kind CASE INSENSITIVE)
    foreach(id ${of_kind})
      get_property(header GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_HEADER)
      get_property(spec GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_SPEC)
      string(APPEND includes "#include \"${header}\"\n")
      string(APPEND lines "      ${spec}(),\n")
    endforeach()
  endforeach()
  configure_file(${CMAKE_SOURCE_DIR}/cmake/connector_registry.cc.in ${CMAKE_BINARY_DIR}/generated/connector_registry.cc
                 @ONLY)

  # What this build has, for people and for tests/connector_options (scripts/check-connectors.py).
  set(manifest "")
  foreach(id ${connectors})
    skippr_connector_option(opt ${id})
    get_property(folder GLOBAL PROPERTY SKIPPR_CONNECTOR_${id}_FOLDER)
    file(RELATIVE_PATH folder ${CMAKE_SOURCE_DIR} ${folder})
    if(${opt})
      string(APPEND manifest "connector ${id} ON ${folder}\n")
    else()
      string(APPEND manifest "connector ${id} OFF ${folder}\n")
    endif()
  endforeach()
  foreach(client ${clients})
    if(client IN_LIST closure)
      string(APPEND manifest "client ${client} ON\n")
    else()
      string(APPEND manifest "client ${client} OFF\n")
    endif()
  endforeach()
  foreach(module ${modules})
    string(APPEND manifest "pkg-config ${module}\n")
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/generated/connectors.txt "${manifest}")

  set(SKIPPR_ENABLED_CONNECTORS ${enabled} PARENT_SCOPE)
  set(SKIPPR_ALL_CONNECTORS_ON ${all_on} PARENT_SCOPE)
  set(SKIPPR_EXCLUDED_DIRS ${excluded} PARENT_SCOPE)
  set(SKIPPR_CONNECTOR_LIBRARIES ${libraries} PARENT_SCOPE)
endfunction()
