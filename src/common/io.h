// File helpers every module uses: reads that fail with a one-line Error naming the file, atomic writes
// (temp file + fsync + rename, so a reader never sees half a file), an exclusive file lock, and the
// YAML <-> JSON bridge (configs are held as JSON in memory).
#pragma once

#include <string_view>

#include "nnmeter/common.h"

namespace YAML {
class Node;
}

namespace nnmeter::io {

// A regular file only (a FIFO or device is an Error, not a hang); larger than `max_bytes` is an Error.
std::string read_file(const fs::path& path, uintmax_t max_bytes = UINTMAX_MAX);
// Writes `content` to `path` atomically; creates the parent folder. The temp file beside it is
// ".<name>.tmp.<pid>.<n>", which a process killed mid-write leaves behind.
void write_file_atomic(const fs::path& path, std::string_view content);
// Removes the temp files of write_file_atomic in `folder` and below whose process is gone (a killed run's),
// and nothing else; returns how many. A run that resumes in its own folders calls it first.
size_t remove_stale_temp_files(const fs::path& folder);

Json load_json_file(const fs::path& path);
// Writes JSON with 4-space indentation and a trailing newline, atomically.
void save_json_file(const fs::path& path, const Json& value);

// Parses YAML text into JSON: integers, floats, booleans (TRUE/false/...), null for empty values,
// strings otherwise. `origin` names the source in error messages.
Json yaml_to_json(const std::string& text, const std::string& origin);
Json load_yaml_file(const fs::path& path);
std::string json_to_yaml(const Json& value);

// Holds an exclusive flock() on `path` (created if needed) for the object's lifetime.
class FileLock {
 public:
  explicit FileLock(const fs::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace nnmeter::io
