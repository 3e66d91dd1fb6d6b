// Python values <-> nlohmann::json, the form connector parameters take in the C++ config code. Only what a
// skippr.yml can hold converts: None, bool, int, float, str (and os.PathLike as its path), lists and str-keyed dicts.
#pragma once

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include <string>

namespace skippr::python {

namespace py = pybind11;

// Raises TypeError naming `what` when the value cannot be written to skippr.yml.
inline nlohmann::json to_json(const py::handle& value, const std::string& what) {
  if (value.is_none()) return nullptr;
  // bool before int: True is an int in Python but a boolean in YAML.
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    try {
      return value.cast<int64_t>();
    } catch (const py::cast_error&) {
      throw py::type_error(what + ": the integer does not fit in 64 bits");
    }
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::hasattr(value, "__fspath__")) return py::module_::import("os").attr("fspath")(value).cast<std::string>();
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : value) out.push_back(to_json(item, what));
    return out;
  }
  if (py::isinstance<py::dict>(value)) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [key, item] : value.cast<py::dict>()) {
      if (!py::isinstance<py::str>(key)) throw py::type_error(what + ": map keys must be strings");
      out[key.cast<std::string>()] = to_json(item, what);
    }
    return out;
  }
  throw py::type_error(what + ": a " + std::string(py::str(value.get_type().attr("__name__"))) +
                       " cannot be written to skippr.yml; use a str, int, float, bool, list or dict");
}

inline py::object to_python(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(value.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(value.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(value.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& item : value) out.append(to_python(item));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto& [key, item] : value.items()) out[py::str(key)] = to_python(item);
      return out;
    }
    default:
      return py::none();
  }
}

}  // namespace skippr::python
