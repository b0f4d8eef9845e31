// An append-only JSON-lines journal: one record per line, fsync'ed on every append, so a record that was
// reported written survives SIGKILL or power loss. A torn last line (killed mid-write) is cut off on open.
// One writer at a time: the constructor takes an advisory lock (<journal>.lock, holding the owner's PID)
// for the object's lifetime, so two runs on one workspace cannot both profile every model.
#pragma once

#include <map>

#include "nnmeter/common.h"

namespace nnmeter {

class Journal {
 public:
  // `base`: another journal read (without its lock, never written) before this one, whose records count as
  // this journal's: a shard sees what the build measured before it, and journals only what it measures.
  explicit Journal(fs::path path, const fs::path& base = {});
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Records read at open plus those appended since, keyed by key(id, repeat) of their "id" and "repeat"
  // (absent: 0, as journals written before repeats existed); the last record of a key wins.
  const std::map<std::string, Json>& records() const { return records_; }
  static std::string key(const std::string& id, int repeat);
  void append(const Json& record);
  // Several records with one sync: a merge of thousands of records does not wait on thousands of syncs.
  void append_all(const std::vector<Json>& records);
  const fs::path& path() const { return path_; }
  // Keys written more than once in this journal's file (a repeat measured twice).
  const std::vector<std::string>& rewritten() const { return rewritten_; }

 private:
  void read_existing();
  void read_records(const fs::path& file, bool repair);
  void write(const std::string& text);

  fs::path path_;
  int lock_fd_ = -1;
  int fd_ = -1;
  std::map<std::string, Json> records_;
  std::vector<std::string> rewritten_;
};

// A measurement record's latencies (mean, std, median, min, max, samples_ms) multiplied by `factor`: a device's
// level taken out of its labels (SHARD_LEVELS and PROBE_LEVELS normalize).
void scale_record(Json& record, double factor);

}  // namespace nnmeter
