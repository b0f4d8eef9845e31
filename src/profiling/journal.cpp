#include "profiling/journal.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/io.h"

namespace nnmeter {

namespace {

Error journal_error(const fs::path& path, const std::string& what) {
  return Error("cannot " + what + " journal " + path.string() + ": " + std::strerror(errno));
}

std::string record_key(const Json& record) {
  return Journal::key(record.at("id").get<std::string>(), record.value("repeat", 0));
}

// Takes the lock without waiting and records our PID in the file; the PID of a live holder goes into the
// error, so the user knows which run to wait for or stop.
int lock_journal(const fs::path& journal) {
  const fs::path lock_path = journal.string() + ".lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw journal_error(journal, "lock");
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    const bool busy = errno == EWOULDBLOCK;
    const Error error = journal_error(journal, "lock");
    char holder[32] = {};
    const ssize_t n = busy ? ::pread(fd, holder, sizeof holder - 1, 0) : 0;
    ::close(fd);
    if (!busy) throw error;
    std::string pid(holder, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    pid = pid.substr(0, pid.find_first_not_of("0123456789"));
    throw Error("journal " + journal.string() + " is in use by another nn-meter run (PID " +
                (pid.empty() ? "unknown" : pid) + "): wait for it to finish or stop it");
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const Error error = journal_error(journal, "lock");
    ::close(fd);
    throw error;
  }
  return fd;
}

}  // namespace

std::string Journal::key(const std::string& id, int repeat) {
  return repeat == 0 ? id : id + "\x1f" + std::to_string(repeat);
}

Journal::Journal(fs::path path, const fs::path& base) : path_(std::move(path)) {
  std::error_code ec;
  fs::create_directories(path_.parent_path(), ec);
  lock_fd_ = lock_journal(path_);
  try {
    if (!base.empty() && fs::exists(base)) read_records(base, false);
    rewritten_.clear();  // only this journal's own file counts
    read_existing();
  } catch (...) {
    ::close(lock_fd_);
    throw;
  }
}

void Journal::read_records(const fs::path& file, bool repair) {
  const std::string text = io::read_file(file);
  const size_t complete = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
  if (repair && complete != text.size() && ::truncate(file.c_str(), static_cast<off_t>(complete)) != 0)
    throw journal_error(file, "repair");
  std::istringstream lines(text.substr(0, complete));
  size_t line_no = 0;
  for (std::string line; std::getline(lines, line);) {
    ++line_no;
    if (line.empty()) continue;
    try {
      Json record = Json::parse(line);
      const std::string key = record_key(record);  // before the move below
      if (records_.count(key)) rewritten_.push_back(key);
      records_[key] = std::move(record);
    } catch (const Json::exception& e) {
      throw Error("journal " + file.string() + " line " + std::to_string(line_no) + " is not a valid record (" +
                  e.what() + "): move the file away to start over");
    }
  }
}

void Journal::read_existing() {
  if (fs::exists(path_)) read_records(path_, true);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw journal_error(path_, "open");
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void Journal::write(const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw journal_error(path_, "append to");
    }
    written += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) throw journal_error(path_, "sync");
}

void Journal::append(const Json& record) {
  write(record.dump() + "\n");
  records_[record_key(record)] = record;
}

void Journal::append_all(const std::vector<Json>& records) {
  std::string text;
  for (const Json& r : records) text += r.dump() + "\n";
  if (!text.empty()) write(text);
  for (const Json& r : records) records_[record_key(r)] = r;
}

void scale_record(Json& record, double factor) {
  for (const char* key : {"mean", "std", "median", "min", "max"})
    if (record.contains(key) && record[key].is_number()) record[key] = record[key].get<double>() * factor;
  if (record.contains("samples_ms") && record["samples_ms"].is_array())
    for (auto& v : record["samples_ms"])
      if (v.is_number()) v = v.get<double>() * factor;
}

}  // namespace nnmeter
