#include "common/io.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

namespace nnmeter::io {

namespace {

std::string errno_text() { return std::strerror(errno); }

// YAML aliases share one node, but the JSON copy expands every use: a few hundred bytes of nested aliases
// would become billions of values. No config of ours comes near this many.
constexpr size_t kMaxYamlValues = 1'000'000;
constexpr uintmax_t kMaxYamlBytes = 16u << 20;
constexpr uintmax_t kMaxJsonBytes = 1u << 30;

struct YamlBudget {
  size_t left = kMaxYamlValues;
};

class YamlTooLarge : public std::exception {};

Json node_to_json(const YAML::Node& node, YamlBudget& budget) {
  if (budget.left-- == 0) throw YamlTooLarge();
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& item : node) out.push_back(node_to_json(item, budget));
      return out;
    }
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = node_to_json(kv.second, budget);
      return out;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string& text = node.Scalar();
  if (node.Tag() == "!") return text;  // quoted scalar: always a string
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") return nullptr;
  int64_t i = 0;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  double d = 0;
  if (YAML::convert<double>::decode(node, d)) return d;
  bool b = false;
  if (YAML::convert<bool>::decode(node, b)) return b;
  return text;
}

void emit(YAML::Emitter& out, const Json& value) {
  if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, item] : value.items()) {
      out << YAML::Key << key << YAML::Value;
      emit(out, item);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : value) emit(out, item);
    out << YAML::EndSeq;
  } else if (value.is_null()) {
    out << YAML::Null;
  } else if (value.is_boolean()) {
    out << (value.get<bool>() ? "TRUE" : "FALSE");
  } else if (value.is_number_integer()) {
    out << value.get<int64_t>();
  } else if (value.is_number()) {
    out << value.get<double>();
  } else {
    // A string that would read back as a number, boolean or null ("1.0", "TRUE", "") is quoted.
    const std::string text = value.get<std::string>();
    bool plain = false;
    try {
      YamlBudget budget;
      plain = !text.empty() && node_to_json(YAML::Load(text), budget) == Json(text);
    } catch (const YAML::Exception&) {
    } catch (const YamlTooLarge&) {
    }
    if (plain) {
      out << text;
    } else {
      out << YAML::DoubleQuoted << text;
    }
  }
}

}  // namespace

std::string read_file(const fs::path& path, uintmax_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status)) throw Error("file not found: " + path.string());
  if (fs::is_directory(status)) throw Error("expected a file but found a folder: " + path.string());
  // A FIFO would block and a device like /dev/zero never ends.
  if (!fs::is_regular_file(status))
    throw Error(path.string() + " is not a regular file (a FIFO or a device?): give the path of a file");
  const uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > max_bytes)
    throw Error(path.string() + " is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                " nn-meter reads from such a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string() + ": " + errno_text());
  // Read at its size in one piece: streaming through a stringstream copied a model's bytes twice and
  // grew the buffer step by step, which cost more than parsing it. A file that grew since it was sized is
  // read on to its end, within the same limit.
  std::string bytes(ec ? 0 : static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  char chunk[1 << 16];
  while (in && bytes.size() <= max_bytes) {
    in.read(chunk, sizeof chunk);
    bytes.append(chunk, static_cast<size_t>(in.gcount()));
  }
  if (bytes.size() > max_bytes)
    throw Error(path.string() + " grew beyond the " + std::to_string(max_bytes) + " bytes nn-meter reads from such a file");
  if (in.bad()) throw Error("cannot read " + path.string() + ": " + errno_text());
  return bytes;
}

namespace {

constexpr std::string_view kTempInfix = ".tmp.";

// The PID in a temp file name write_file_atomic gives (".<name>.tmp.<pid>.<n>"), or 0 for any other name.
pid_t temp_file_owner(const std::string& name) {
  if (name.size() < 2 || name[0] != '.') return 0;
  const size_t infix = name.rfind(kTempInfix);
  if (infix == std::string::npos || infix == 0) return 0;
  const std::string rest = name.substr(infix + kTempInfix.size());  // "<pid>.<n>"
  const size_t dot = rest.find('.');
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string::npos || !digits(rest.substr(0, dot)) || !digits(rest.substr(dot + 1))) return 0;
  const long long pid = std::stoll(rest.substr(0, dot));
  return pid > 0 && pid <= std::numeric_limits<pid_t>::max() ? static_cast<pid_t>(pid) : 0;
}

}  // namespace

void write_file_atomic(const fs::path& path, std::string_view content) {
  static std::atomic<unsigned> counter{0};
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw Error("cannot create folder " + parent.string() + ": " + ec.message());
  const fs::path temp = parent / ("." + path.filename().string() + std::string(kTempInfix) + std::to_string(::getpid()) +
                                  "." + std::to_string(counter++));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + path.string() + ": " + errno_text());
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string reason = errno_text();
      ::close(fd);
      ::unlink(temp.c_str());
      throw Error("cannot write " + path.string() + ": " + reason);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string reason = errno_text();
    ::unlink(temp.c_str());
    throw Error("cannot write " + path.string() + ": " + reason);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    ::unlink(temp.c_str());
    throw Error("cannot write " + path.string() + ": " + reason);
  }
}

size_t remove_stale_temp_files(const fs::path& folder) {
  size_t removed = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    const pid_t owner = temp_file_owner(it->path().filename().string());
    // A live owner (this process, a concurrent run, or an unrelated process that took a dead one's PID) keeps it.
    if (owner == 0 || owner == ::getpid() || ::kill(owner, 0) == 0 || errno != ESRCH) continue;
    std::error_code removing;
    if (fs::remove(it->path(), removing)) ++removed;
  }
  return removed;
}

Json load_json_file(const fs::path& path) {
  const std::string text = read_file(path, kMaxJsonBytes);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw Error(path.string() + " is not valid JSON (byte " + std::to_string(e.byte) + ")");
  } catch (const Json::exception& e) {  // a number beyond double range is out_of_range, not a parse error
    throw Error(path.string() + " is not valid JSON (" + e.what() + ")");
  }
}

void save_json_file(const fs::path& path, const Json& value) { write_file_atomic(path, value.dump(4) + "\n"); }

Json yaml_to_json(const std::string& text, const std::string& origin) {
  try {
    YamlBudget budget;
    return node_to_json(YAML::Load(text), budget);
  } catch (const YAML::Exception& e) {
    throw Error(origin + " is not valid YAML (line " + std::to_string(e.mark.line + 1) + ": " + e.msg + ")");
  } catch (const YamlTooLarge&) {
    throw Error(origin + " expands to more than " + std::to_string(kMaxYamlValues) +
                " values (nested YAML aliases?): write the values out");
  }
}

Json load_yaml_file(const fs::path& path) { return yaml_to_json(read_file(path, kMaxYamlBytes), path.string()); }

std::string json_to_yaml(const Json& value) {
  YAML::Emitter out;
  emit(out, value);
  return std::string(out.c_str()) + "\n";
}

FileLock::FileLock(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open lock file " + path.string() + ": " + errno_text());
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const std::string reason = errno_text();
      ::close(fd_);
      throw Error("cannot lock " + path.string() + ": " + reason);
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace nnmeter::io
