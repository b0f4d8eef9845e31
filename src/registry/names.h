// The one grammar for every name a user registers (backend, kernel, operator, test case, predictor and
// its version, implement): names become CLI subcommands and parts of file names, so anything that could
// read as a flag, a path or YAML syntax is refused.
#pragma once

#include <optional>
#include <string>

namespace nnmeter {

// 1-64 characters of letters, digits, '_', '.', '-'; starts with a letter or digit; no "..".
// Returns why `name` breaks the grammar, or nullopt when it is fine.
std::optional<std::string> name_problem(const std::string& name);

// `name` JSON-quoted and cut to 80 characters, safe inside a one-line message.
std::string quoted_name(const std::string& name);

// Throws Error "<what> name "<name>" <problem> (in <origin>)" when `name` breaks the grammar.
void check_name(const std::string& what, const std::string& name, const std::string& origin);

}  // namespace nnmeter
