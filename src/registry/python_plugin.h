// Customized modules written in Python, as nn-Meter's users write them (a backend deriving BaseBackend, a
// kernel deriving BaseBlock, its sampler and parser): each object lives in a plugin host process,
// `python3 nn_meter/_plugin_host.py`, started by argv and fed JSON calls on its stdin, so an exception
// costs one call and a crash one line, and the interpreter never runs inside nn-meter's own process.
#pragma once

#include <memory>

#include "registry/plugin_library.h"

namespace nnmeter {

// The object of class `class_name` of the Python module `module_file` (<package>/<module>.py), constructed
// with `config` (a backend), the registered `name` (a feature parser) or nothing. Throws Error with the
// plugin's one-line reason when the module does not import or the class cannot be constructed.
std::unique_ptr<PluginObject> create_python_plugin_object(const fs::path& module_file, const std::string& class_name,
                                                          const std::string& kind, const std::string& name,
                                                          const Json& config);

// The command that starts a plugin host: the interpreter ($NN_METER_PYTHON, else /usr/bin/python3, else
// python3 on PATH) and the host script of the nn_meter package built or installed with this library (or
// $NN_METER_PLUGIN_HOST). Throws Error saying what to install when there is none.
std::vector<std::string> python_plugin_host_command();

}  // namespace nnmeter
