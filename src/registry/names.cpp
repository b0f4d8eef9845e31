#include "registry/names.h"

#include <algorithm>

#include "common/text.h"
#include "nnmeter/common.h"

namespace nnmeter {

namespace {

constexpr size_t kMaxNameLength = 64;

bool ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

}  // namespace

std::optional<std::string> name_problem(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxNameLength) return "is longer than 64 characters";
  if (!ascii_alnum(name.front())) return "must start with a letter or a digit";
  if (!std::all_of(name.begin(), name.end(), [](char c) { return ascii_alnum(c) || c == '_' || c == '.' || c == '-'; }))
    return "may only hold letters, digits, '_', '.' and '-'";
  if (name.find("..") != std::string::npos) return "must not contain '..'";
  return std::nullopt;
}

std::string quoted_name(const std::string& name) { return quoted(name); }

void check_name(const std::string& what, const std::string& name, const std::string& origin) {
  if (const auto problem = name_problem(name))
    throw Error(what + " name " + quoted_name(name) + " " + *problem + " (in " + origin +
                "): choose a name of letters, digits, '_', '.' and '-'");
}

}  // namespace nnmeter
