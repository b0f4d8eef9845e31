#include "workspace/config_files.h"

#include "common/io.h"

namespace nnmeter {

namespace {

void merge_into(Json& base, const Json& over) {
  for (const auto& [key, value] : over.items()) {
    if (value.is_object() && base.contains(key) && base[key].is_object()) {
      merge_into(base[key], value);
    } else {
      base[key] = value;
    }
  }
}

Json load(const fs::path& file, std::vector<fs::path>& chain, int& files_read) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  for (const auto& seen : chain)
    if (seen == canonical) {
      std::string cycle;
      for (const auto& p : chain) cycle += p.filename().string() + " -> ";
      throw Error("config inheritance cycle: " + cycle + canonical.filename().string() + " (_base_ of " +
                  chain.back().string() + ")");
    }
  if (++files_read > kMaxConfigFiles)
    throw Error(chain.front().string() + " pulls in more than " + std::to_string(kMaxConfigFiles) +
                " config files through _base_");
  if (!fs::exists(file))
    throw Error(chain.empty() ? file.string() + " does not exist"
                              : chain.back().string() + ": its _base_ " + file.string() + " does not exist");
  Json own = io::load_yaml_file(file);
  if (own.is_null()) own = Json::object();
  if (!own.is_object()) throw Error(file.string() + " must be a mapping of keys to values");
  if (!own.contains("_base_")) return own;

  Json bases = own["_base_"];
  own.erase("_base_");
  if (bases.is_string()) bases = Json::array({bases});
  if (!bases.is_array() || bases.empty())
    throw Error(file.string() + ": _base_ must be a file path or a list of file paths");
  chain.push_back(canonical);
  Json merged = Json::object();
  for (const auto& base : bases) {
    if (!base.is_string() || base.get<std::string>().empty())
      throw Error(file.string() + ": _base_ must be a file path or a list of file paths, not " + base.dump());
    fs::path path = base.get<std::string>();
    if (path.is_relative()) path = file.parent_path() / path;
    merge_into(merged, load(path, chain, files_read));
  }
  chain.pop_back();
  merge_into(merged, own);
  return merged;
}

}  // namespace

Json load_config_file(const fs::path& file) {
  std::vector<fs::path> chain;
  int files_read = 0;
  return load(file, chain, files_read);
}

}  // namespace nnmeter
