// The Python module `skippr`: a thin binding over the library the CLI uses. skippr.yml is edited through
// ConfigDocument (raw values, ${VAR} kept), syncs run the same engine in-process, queries the same control language.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <optional>

#include "clients/duckdb/duckdb_client.h"
#include "config/config_document.h"
#include "config/param_values.h"
#include "core/connector.h"
#include "engine/command_setup.h"
#include "engine/sync.h"
#include "py_values.h"

namespace skippr::python {
namespace {

// ---- skippr.Error --------------------------------------------------------------------------------------------------

PyObject* g_error_type = nullptr;

[[noreturn]] void raise_error(int exit_code, const std::string& message, py::object stats = py::none()) {
  py::object error = py::reinterpret_borrow<py::object>(g_error_type)(message);
  error.attr("exit_code") = exit_code;
  error.attr("stats") = std::move(stats);
  PyErr_SetObject(g_error_type, error.ptr());
  throw py::error_already_set();
}

[[noreturn]] void raise_error(const Error& e) { raise_error(exit_code_for(e.kind), e.message); }

template <class T>
T value_or_raise(Result<T> result) {
  if (!result) raise_error(result.error());
  return std::move(*result);
}

void ok_or_raise(const Status& status) {
  if (!status) raise_error(status.error());
}

// ---- connectors: DataSource / DataSink and one subclass per registered type -----------------------------------------

struct ConnectorValue {
  const ConnectorSpec* spec = nullptr;
  std::optional<std::string> name;  // set once it is a named entry of a config
  nlohmann::json params = nlohmann::json::object();
};
struct DataSourceValue : ConnectorValue {};
struct DataSinkValue : ConnectorValue {};

std::string class_name(const ConnectorSpec& spec) {
  return (spec.is_source ? "DataSource" : "DataSink") + spec.type_name;
}

template <class Value>
Value make_connector(bool is_source, const std::string& type_name, const py::dict& kwargs) {
  const ConnectorSpec* spec = find_connector(type_name, is_source);
  if (spec == nullptr) {
    raise_error(exit_code::kUsage, "this build has no " + std::string(is_source ? "source" : "sink") + " type '" +
                                       type_name + "'; skippr.connectors() lists the ones it has");
  }
  Value value;
  value.spec = spec;
  for (const auto& [key, item] : kwargs) {
    const auto k = py::cast<std::string>(key);
    value.params[k] = to_json(item, class_name(*spec) + "(): '" + k + "'");
  }
  if (auto problem = params_problem(*spec, value.params)) throw py::type_error(class_name(*spec) + "(): " + *problem);
  return value;
}

const char* python_type(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return "str";
    case ParamType::kPath:
      return "str | os.PathLike[str]";
    case ParamType::kInt:
      return "int";
    case ParamType::kDouble:
      return "float";
    case ParamType::kBool:
      return "bool";
    case ParamType::kStringList:
      return "list[str]";
    case ParamType::kStringMap:
      return "dict[str, str]";
  }
  return "str";
}

std::string connector_repr(const ConnectorValue& v) {
  std::string out = class_name(*v.spec) + "(";
  bool first = true;
  for (const auto& [key, item] : v.params.items()) {
    out += (first ? "" : ", ") + key + "=" + std::string(py::repr(to_python(item)));
    first = false;
  }
  out += ")";
  if (v.name) out += " named '" + *v.name + "'";
  return out;
}

std::string class_doc(const ConnectorSpec& spec) {
  std::string signature, params;
  for (const auto& p : spec.params) {
    signature += (signature.empty() ? "*, " : ", ") + p.name + ": " + python_type(p.type);
    if (!p.required) signature += " = " + (p.default_value.is_null() ? "None" : p.default_value.dump());
    params += "\n    " + p.name + " (" + python_type(p.type) + (p.required ? ", required" : "") + "): " + p.doc;
  }
  std::string doc = class_name(spec) + "(" + signature + ")\n\n" + spec.summary + ".";
  if (!spec.is_source) doc += " Guarantee on retry: " + std::string(to_string(spec.guarantee)) + ".";
  doc +=
      params.empty() ? "\n\nTakes no parameters." : "\n\nParameters (any may also be a \"${VAR}\" reference):" + params;
  return doc;
}

// inspect.signature() and help() show the keywords of each generated class.
py::object class_signature(const ConnectorSpec& spec) {
  auto inspect = py::module_::import("inspect");
  auto Parameter = inspect.attr("Parameter");
  py::list parameters;
  parameters.append(Parameter("self", Parameter.attr("POSITIONAL_ONLY")));
  for (const auto& p : spec.params) {
    py::dict kwargs;
    if (!p.required) kwargs["default"] = to_python(p.default_value);
    kwargs["annotation"] = python_type(p.type);
    parameters.append(Parameter(p.name, Parameter.attr("KEYWORD_ONLY"), **kwargs));
  }
  return inspect.attr("Signature")(parameters);
}

// DataSourceSample, DataSinkDuckDB, ...: keyword-only constructors checked against the ConnectorSpec.
void add_connector_classes(py::module_& m, const py::object& source_base, const py::object& sink_base) {
  auto builtins = py::module_::import("builtins");
  for (const auto& spec : connector_registry()) {
    const py::object base = spec.is_source ? source_base : sink_base;
    py::dict attrs;
    attrs["__doc__"] = class_doc(spec);
    attrs["__module__"] = "skippr";
    py::object cls = builtins.attr("type")(class_name(spec), py::make_tuple(base), attrs);
    const std::string type_name = spec.type_name, name = class_name(spec);
    cls.attr("__init__") = py::cpp_function(
        [base, type_name, name](py::object self, py::args args, py::kwargs kwargs) {
          if (!args.empty())
            throw py::type_error(name + "() takes keyword arguments only, e.g. " + name + "(" + "name=value)");
          base.attr("__init__")(self, type_name, kwargs);
        },
        py::is_method(cls));
    // The instance's signature drops self; inspect.signature(cls) reads __signature__ as is.
    py::object signature = class_signature(spec);
    py::list without_self(signature.attr("parameters").attr("values")());
    without_self.attr("pop")(0);
    cls.attr("__signature__") = signature.attr("replace")(py::arg("parameters") = without_self);
    m.attr(name.c_str()) = cls;
  }
}

// The instance get_data_source()/get_data_sink() return: the generated class of its type, built from the file's
// raw values, carrying its name.
py::object connector_object(const py::module_& m, bool is_source, const std::string& name, const RawConnector& raw) {
  const ConnectorSpec* spec = find_connector(raw.type, is_source);
  if (spec == nullptr) {
    raise_error(exit_code::kUsage, "data_" + std::string(is_source ? "sources." : "sinks.") + name + " has type '" +
                                       raw.type +
                                       "', which this build does not have; skippr.connectors() lists the "
                                       "ones it has");
  }
  py::object cls = m.attr(class_name(*spec).c_str());
  py::object obj = cls(**to_python(raw.params).cast<py::dict>());
  obj.cast<ConnectorValue&>().name = name;
  return obj;
}

// ---- Pipeline ------------------------------------------------------------------------------------------------------

struct PipelineValue {
  RawPipeline raw;
};

template <class Value>
std::string connector_reference(const py::object& given, const char* keyword, const char* expected) {
  if (py::isinstance<py::str>(given)) return given.cast<std::string>();
  if (py::isinstance<Value>(given)) {
    const auto& v = given.cast<const Value&>();
    if (!v.name) {
      throw py::type_error(std::string("Pipeline(") + keyword + "=...): this " + class_name(*v.spec) +
                           " has no name yet; add it to the config first (cfg." + keyword +
                           "(\"name\", ...)) or pass "
                           "the name of one");
    }
    return *v.name;
  }
  throw py::type_error(std::string("Pipeline(") + keyword + "=...): expected " + expected + " or its name, got " +
                       std::string(py::str(given.get_type().attr("__name__"))));
}

// A keyword's list of column names (one name alone is a list of one); nullopt when unset.
std::optional<std::vector<std::string>> column_names(const py::object& given, const char* keyword) {
  if (given.is_none()) return std::nullopt;
  auto names = to_json(given, std::string("Pipeline(") + keyword + "=...)");
  if (names.is_string()) names = nlohmann::json::array({names});
  bool strings = names.is_array();
  for (const auto& column : names) strings = strings && column.is_string();
  if (!strings)
    throw py::type_error(std::string("Pipeline(") + keyword + "=...): must be a list of column names (str)");
  return names.get<std::vector<std::string>>();
}

PipelineValue make_pipeline(const py::object& data_source, const py::object& data_sink, const py::object& chaos_mode,
                            const py::object& landing, const py::object& primary_key, const py::object& partition_by,
                            const py::object& allow_empty_replace) {
  PipelineValue p;
  p.raw.data_source = connector_reference<DataSourceValue>(data_source, "data_source", "a DataSource");
  p.raw.data_sink = connector_reference<DataSinkValue>(data_sink, "data_sink", "a DataSink");
  auto flag = [](const py::object& given, const char* keyword) {
    if (given.is_none()) return nlohmann::json();
    auto value = to_json(given, std::string("Pipeline(") + keyword + "=...)");
    if (!value.is_boolean() && !is_env_reference(value)) {
      throw py::type_error(std::string("Pipeline(") + keyword +
                           "=...): must be True or False (or a \"${VAR}\" reference)");
    }
    return value;
  };
  p.raw.chaos_mode = flag(chaos_mode, "chaos_mode");
  p.raw.allow_empty_replace = flag(allow_empty_replace, "allow_empty_replace");
  if (!landing.is_none()) {
    if (!py::isinstance<py::str>(landing)) {
      throw py::type_error(
          "Pipeline(landing=...): must be a str: append, merge_by_key, replace_partition or "
          "replace_table");
    }
    p.raw.landing = landing.cast<std::string>();
  }
  p.raw.primary_key = column_names(primary_key, "primary_key");
  p.raw.partition_by = column_names(partition_by, "partition_by");
  return p;
}

py::object pipeline_keyword(const PipelineValue& p, const char* key) {
  const RawPipeline& r = p.raw;
  if (std::string_view(key) == "chaos_mode") return to_python(r.chaos_mode);
  if (std::string_view(key) == "allow_empty_replace") return to_python(r.allow_empty_replace);
  if (std::string_view(key) == "landing") return r.landing ? py::object(py::str(*r.landing)) : py::none();
  const auto& columns = std::string_view(key) == "primary_key" ? r.primary_key : r.partition_by;
  return columns ? py::object(py::cast(*columns)) : py::none();
}

std::string pipeline_repr(const PipelineValue& p) {
  std::string out = "Pipeline(data_source='" + p.raw.data_source + "', data_sink='" + p.raw.data_sink + "'";
  for (const char* key : {"chaos_mode", "landing", "primary_key", "partition_by", "allow_empty_replace"}) {
    py::object v = pipeline_keyword(p, key);
    if (!v.is_none()) out += std::string(", ") + key + "=" + std::string(py::repr(v));
  }
  return out + ")";
}

// ---- sync ----------------------------------------------------------------------------------------------------------

class SilentReporter final : public Reporter {
 public:
  void sync_start(const std::string&, uint64_t, uint64_t) override {}
  void batch_committed(const BatchId&, uint64_t, const RunTotals&) override {}
  void batch_landed(const BatchId&, uint64_t, bool, bool, std::optional<double>, const RunTotals&) override {}
  void rows_read(const RunTotals&) override {}
  void sync_complete(const RunTotals&, int) override {}
  void error(const std::string&) override {}
};

std::unique_ptr<Reporter> reporter_for(const std::optional<std::string>& output, bool sink_writes_stdout) {
  if (!output) return std::make_unique<SilentReporter>();
  std::FILE* out = sink_writes_stdout ? stderr : stdout;
  if (*output == "text") return make_reporter(OutputMode::kText, out);
  if (*output == "json") return make_reporter(OutputMode::kJson, out);
  if (*output == "progress") return make_reporter(OutputMode::kProgress, out);
  throw py::value_error("sync(output=...): must be None, 'text', 'json' or 'progress', got '" + *output + "'");
}

py::dict stats_dict(const SyncResult& r) {
  const RunTotals& t = r.totals;
  py::dict d;
  for (const auto& [name, member] : DeliveryCounts::fields()) d[name] = t.*member;
  d["batches_waiting"] = t.batches_waiting;
  d["last_batch_landed"] = t.last_batch_landed;
  d["wal_bytes"] = t.wal_bytes;
  d["seconds"] = t.seconds;
  d["rows_per_second"] = t.rows_per_second();
  d["exit_code"] = r.exit_code;
  return d;
}

// str / os.PathLike / Config / None -> the explicit config path (None: discover like the CLI).
std::optional<std::filesystem::path> config_path_of(const py::object& config) {
  if (config.is_none()) return std::nullopt;
  if (py::isinstance<ConfigDocument>(config)) return config.cast<const ConfigDocument&>().file();
  if (py::isinstance<py::str>(config) || py::hasattr(config, "__fspath__")) {
    return std::filesystem::path(py::module_::import("os").attr("fspath")(config).cast<std::string>());
  }
  throw py::type_error("config=...: expected a path, a skippr.Config or None, got " +
                       std::string(py::str(config.get_type().attr("__name__"))));
}

py::dict sync_pipeline(const std::string& pipeline, bool once, const py::object& config,
                       std::optional<std::string> output) {
  SyncSetup setup = value_or_raise(prepare_sync(config_path_of(config), pipeline));
  const PipelineConfig& pipe = setup.config.pipelines.at(pipeline);
  if (setup.settings.chaos_mode.value_or(pipe.chaos_mode)) {
    raise_error(exit_code::kUsage, "pipeline '" + pipeline +
                                       "' runs in chaos mode, which SIGKILLs the process running it: this Python "
                                       "process. Run it with the CLI (skipprd sync --pipeline " +
                                       pipeline +
                                       "), or set "
                                       "SKIPPR_CHAOS_MODE=no to run it here without chaos");
  }
  auto reporter = reporter_for(output, sink_writes_stdout(setup.config, pipeline));

  std::atomic<bool> stop_requested{false};
  SyncOptions options;
  options.pipeline = pipeline;
  options.once = once;
  options.stop_requested = &stop_requested;
  // The engine runs on a worker thread without the GIL; this thread wakes every 100 ms to let Python run its signal
  // handlers. Ctrl-C then stops the engine like SIGINT stops the CLI (stop reading, land what is committed), and the
  // KeyboardInterrupt is raised once it has returned.
  auto run = std::async(std::launch::async, [&] { return run_sync(setup.config, setup.settings, options, *reporter); });
  std::optional<py::error_already_set> interrupted;
  while (true) {
    {
      py::gil_scoped_release release;
      if (run.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) break;
    }
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted.emplace();  // takes the pending exception; re-raised below
      stop_requested = true;
    }
  }
  SyncResult result = run.get();
  if (interrupted) throw std::move(*interrupted);
  py::dict stats = stats_dict(result);
  if (result.exit_code != 0) raise_error(result.exit_code, result.message, stats);
  return stats;
}

// ---- query ---------------------------------------------------------------------------------------------------------

py::list rows_as_dicts(const std::vector<std::string>& columns, const auto& rows) {
  py::list out;
  for (const auto& row : rows) {
    py::dict d;
    for (size_t i = 0; i < columns.size() && i < row.size(); ++i) d[py::str(columns[i])] = py::cast(row[i]);
    out.append(d);
  }
  return out;
}

py::object query(const std::string& sql, const py::object& config) {
  QueryResult r = value_or_raise(run_statement(sql, config_path_of(config)));
  if (r.columns.empty()) return py::str(r.message);
  return rows_as_dicts(r.columns, r.rows);
}

py::list query_duckdb_file(const std::string& path, const std::string& sql) {
  auto db = value_or_raise(DuckDbDatabase::open(path));
  auto conn = value_or_raise(DuckDbConnection::connect(db));
  QueryRows rows = value_or_raise(conn.query(sql));
  return rows_as_dicts(rows.columns, rows.rows);
}

py::list connectors() {
  py::list out;
  for (const auto& spec : connector_registry()) {
    py::list params;
    for (const auto& p : spec.params) {
      params.append(py::dict(py::arg("name") = p.name, py::arg("type") = to_string(p.type),
                             py::arg("python_type") = python_type(p.type), py::arg("required") = p.required,
                             py::arg("default") = to_python(p.default_value), py::arg("doc") = p.doc));
    }
    out.append(py::dict(py::arg("class_name") = class_name(spec), py::arg("type_name") = spec.type_name,
                        py::arg("kind") = spec.is_source ? "source" : "sink", py::arg("summary") = spec.summary,
                        py::arg("guarantee") = spec.is_source ? "" : to_string(spec.guarantee),
                        py::arg("params") = params));
  }
  return out;
}

// Config.data_source / data_sink: record it under `name`; the same object comes back, now carrying that name.
template <class Value>
py::object add_connector(ConfigDocument& d, bool is_source, const std::string& name, const py::object& connector) {
  const char* kind = is_source ? "DataSource" : "DataSink";
  if (!py::isinstance<Value>(connector)) {
    throw py::type_error(std::string(is_source ? "data_source" : "data_sink") + "(name, ...): expected a " + kind +
                         " such as " + kind + (is_source ? "Sample" : "DuckDB") + "(...), got " +
                         std::string(py::str(connector.get_type().attr("__name__"))));
  }
  auto& value = connector.cast<Value&>();
  ok_or_raise(d.set_connector(is_source, name, RawConnector{value.spec->type_name, value.params}));
  value.name = name;
  return connector;
}

}  // namespace
}  // namespace skippr::python

using namespace skippr;
using namespace skippr::python;

PYBIND11_MODULE(skippr, m) {
  m.doc() = R"(skipprd from Python: edit skippr.yml, run a pipeline in-process, run control statements.

    from skippr import Config, Pipeline
    cfg = Config.discover()
    cfg.pipeline("bikehire", Pipeline(data_source=cfg.get_data_source("sample"),
                                      data_sink=cfg.get_data_sink("warehouse")))
    cfg.save()
    stats = skippr.sync("bikehire")

Config keeps the values as written: a "${VAR}" reference stays a reference and is never written back expanded.
save() writes only what the CLI's own checks accept, atomically. Comments inside the file are not kept (yaml-cpp
drops them); the comment block at the top of the file is.)";

  m.attr("__version__") = SKIPPR_VERSION;  // the project's version (CMake), as `skipprd --version` prints it

  g_error_type = PyErr_NewExceptionWithDoc(
      "skippr.Error",
      "A skipprd failure: the same sentence the CLI prints, and .exit_code, the code the CLI would exit with (2 config "
      "or usage, 3 pipeline busy, 70 WAL or state damaged, 75 retry later: nothing is lost). Errors of sync() also "
      "carry .stats, the run's statistics.",
      PyExc_Exception, nullptr);
  m.attr("Error") = py::handle(g_error_type);
  m.attr("Error").attr("exit_code") = 1;
  m.attr("Error").attr("stats") = py::none();

  py::class_<ConnectorValue> connector(m, "_Connector");
  connector
      .def_property(
          "name", [](const ConnectorValue& v) { return v.name; },
          [](ConnectorValue& v, std::optional<std::string> name) { v.name = std::move(name); },
          "Its name in skippr.yml, once it has one (set by Config.get_data_source/data_source and friends).")
      .def_property_readonly(
          "type_name", [](const ConnectorValue& v) { return v.spec->type_name; }, "The YAML type name, e.g. 'DuckDB'.")
      .def_property_readonly(
          "params", [](const ConnectorValue& v) { return to_python(v.params); },
          "The parameters as written (a copy): literals typed, \"${VAR}\" references as text.")
      .def("__repr__", &connector_repr)
      .def("__eq__", [](const ConnectorValue& a, const ConnectorValue& b) {
        return a.spec == b.spec && a.name == b.name && a.params == b.params;
      });
  py::class_<DataSourceValue, ConnectorValue> source_base(m, "DataSource",
                                                          "Base of DataSourceSample and the other data sources.");
  source_base.def(py::init([](const std::string& type_name, const py::dict& params) {
                    return make_connector<DataSourceValue>(true, type_name, params);
                  }),
                  py::arg("type_name"), py::arg("params"));
  py::class_<DataSinkValue, ConnectorValue> sink_base(m, "DataSink",
                                                      "Base of DataSinkDuckDB and the other data sinks.");
  sink_base.def(py::init([](const std::string& type_name, const py::dict& params) {
                  return make_connector<DataSinkValue>(false, type_name, params);
                }),
                py::arg("type_name"), py::arg("params"));
  add_connector_classes(m, source_base, sink_base);

  py::class_<PipelineValue>(m, "Pipeline", "A pipeline: which data source goes to which data sink, and how.")
      .def(py::init(&make_pipeline), py::arg("data_source"), py::arg("data_sink"), py::kw_only(),
           py::arg("chaos_mode") = py::none(), py::arg("landing") = py::none(), py::arg("primary_key") = py::none(),
           py::arg("partition_by") = py::none(), py::arg("allow_empty_replace") = py::none(),
           R"(data_source / data_sink: what Config.get_data_source / get_data_sink return, or a name.
chaos_mode: True makes the CLI SIGKILL itself at random moments (to prove nothing is lost).
landing: append (default), merge_by_key, replace_partition or replace_table.
primary_key: the key columns (needed by merge_by_key).
partition_by: the columns whose values make a partition (needed by replace_partition).
allow_empty_replace: True lets a replace_table sync that reads no rows empty the table (refused otherwise).
Unset keywords are left out of the file.)")
      .def_property_readonly("data_source", [](const PipelineValue& p) { return p.raw.data_source; })
      .def_property_readonly("data_sink", [](const PipelineValue& p) { return p.raw.data_sink; })
      .def_property_readonly("chaos_mode", [](const PipelineValue& p) { return pipeline_keyword(p, "chaos_mode"); })
      .def_property_readonly("landing", [](const PipelineValue& p) { return pipeline_keyword(p, "landing"); })
      .def_property_readonly("primary_key", [](const PipelineValue& p) { return pipeline_keyword(p, "primary_key"); })
      .def_property_readonly("partition_by", [](const PipelineValue& p) { return pipeline_keyword(p, "partition_by"); })
      .def_property_readonly("allow_empty_replace",
                             [](const PipelineValue& p) { return pipeline_keyword(p, "allow_empty_replace"); })
      .def("__repr__", &pipeline_repr)
      .def("__eq__",
           [](const PipelineValue& a, const PipelineValue& b) { return pipeline_repr(a) == pipeline_repr(b); });

  py::class_<ConfigDocument>(m, "Config", R"(skippr.yml as written, to read and edit, then save().

Values stay as written: "${VAR}" references are kept, never expanded into the file. save() checks the result
with the CLI's own validation (so referenced variables must be set, or in the .env beside the file) and replaces
the file atomically. Comments inside the file are lost on save (yaml-cpp does not keep them); the comment block at
the top of the file is kept.)")
      .def_static(
          "discover",
          []() {
            return value_or_raise(
                ConfigDocument::load(value_or_raise(discover_config(std::nullopt, std::filesystem::current_path()))));
          },
          "The skippr.yml the CLI would use: $SKIPPR_CONFIG_FILE, else the working folder or its nearest parent.")
      .def_static(
          "load", [](const std::filesystem::path& path) { return value_or_raise(ConfigDocument::load(path)); },
          py::arg("path"), "Reads the skippr.yml at path.")
      .def_property_readonly(
          "path", [](const ConfigDocument& d) { return d.file().string(); }, "The file's absolute path.")
      .def(
          "get_data_source",
          [m](const ConfigDocument& d, const std::string& name) {
            return connector_object(m, true, name, value_or_raise(d.connector(true, name)));
          },
          py::arg("name"), "The data source of that name, e.g. a DataSourceSample; raises skippr.Error when absent.")
      .def(
          "get_data_sink",
          [m](const ConfigDocument& d, const std::string& name) {
            return connector_object(m, false, name, value_or_raise(d.connector(false, name)));
          },
          py::arg("name"), "The data sink of that name, e.g. a DataSinkDuckDB; raises skippr.Error when absent.")
      .def(
          "data_source",
          [](ConfigDocument& d, const std::string& name, const py::object& source) {
            return add_connector<DataSourceValue>(d, true, name, source);
          },
          py::arg("name"), py::arg("source"),
          "Adds or replaces the data source `name`; returns `source`, now carrying that name.")
      .def(
          "data_sink",
          [](ConfigDocument& d, const std::string& name, const py::object& sink) {
            return add_connector<DataSinkValue>(d, false, name, sink);
          },
          py::arg("name"), py::arg("sink"),
          "Adds or replaces the data sink `name`; returns `sink`, now carrying that name.")
      .def(
          "pipeline",
          [](ConfigDocument& d, const std::string& name, const PipelineValue& p) {
            ok_or_raise(d.set_pipeline(name, p.raw));
            return p;
          },
          py::arg("name"), py::arg("pipeline"),
          "Adds or replaces the pipeline `name`. Its data_source and data_sink must exist in this config.")
      .def(
          "get_pipeline",
          [](const ConfigDocument& d, const std::string& name) {
            return PipelineValue{value_or_raise(d.pipeline(name))};
          },
          py::arg("name"), "The pipeline of that name; raises skippr.Error when absent.")
      .def(
          "pipelines",
          [](const ConfigDocument& d) {
            py::dict out;
            for (const auto& name : d.pipeline_names())
              out[py::str(name)] = PipelineValue{value_or_raise(d.pipeline(name))};
            return out;
          },
          "Every pipeline, by name, in file order.")
      .def(
          "data_sources", [](const ConfigDocument& d) { return d.connector_names(true); }, "The data sources' names.")
      .def(
          "data_sinks", [](const ConfigDocument& d) { return d.connector_names(false); }, "The data sinks' names.")
      .def("to_yaml", &ConfigDocument::emit, "The text save() would write.")
      .def(
          "validate", [](const ConfigDocument& d) { value_or_raise(d.validate()); },
          "Runs the CLI's checks on the text save() would write; raises skippr.Error listing every problem.")
      .def(
          "save", [](const ConfigDocument& d) { ok_or_raise(d.save()); },
          "Validates, then atomically replaces the file. On any problem raises skippr.Error and the file is unchanged.")
      .def("__repr__", [](const ConfigDocument& d) { return "Config.load('" + d.file().string() + "')"; });

  m.def("sync", &sync_pipeline, py::arg("pipeline"), py::arg("once") = true, py::arg("config") = py::none(),
        py::arg("output") = py::none(),
        R"(Runs a pipeline in this process, like `skipprd sync --pipeline NAME [--once]`, and returns its statistics
(rows_read, rows_committed, rows_landed, batches_landed, batches_replayed, seconds, rows_per_second, exit_code, ...).

config: the skippr.yml to use (a path or a Config: what is saved on disk runs); None finds it like the CLI.
output: None (quiet), 'text', 'json' or 'progress': the CLI's run events, on stdout.
Raises skippr.Error (with .exit_code and .stats) when the run does not finish with exit code 0; 75 means committed
batches wait in the WAL and a rerun delivers them. Ctrl-C stops reading, lands what is committed (for up to 10
seconds), then raises KeyboardInterrupt; nothing committed is lost. A pipeline in chaos mode is refused: chaos
mode kills the process it runs in.)");
  m.def("query", &query, py::arg("sql"), py::kw_only(), py::arg("config") = py::none(),
        R"(Runs one control statement, like `skipprd query --sql`: SHOW PIPELINES, SHOW PIPELINE name, SHOW STATS FOR
name, RESET PIPELINE name, ENABLE PIPELINE name, DISABLE PIPELINE name. Returns the rows as a list of dicts
(values as text), or the message of a statement that changes something.)");
  m.def("connectors", &connectors, "The sources and sinks of this build, with their parameters.");
  m.def("_duckdb_query", &query_duckdb_file, py::arg("path"), py::arg("sql"),
        "Testing aid: runs SQL on a DuckDB file (opened read-write, so not while a sync writes it) and returns the "
        "rows as dicts of text (None for NULL). Not a stable API.");
}
