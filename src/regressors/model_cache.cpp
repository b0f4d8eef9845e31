#include "regressors/model_cache.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <fstream>
#include <vector>

#include "common/bytes.h"
#include "common/hash.h"
#include "common/io.h"

namespace nnmeter {

namespace {

constexpr std::string_view kMagic = "nn-meter tree cache\n";
// Bumped when the payload's layout changes. nn-meter's own version is recorded as well, because another
// release may read the same JSON differently.
constexpr uint32_t kCacheFormat = 1;
// Compared on reading: a cache copied from a machine of the other byte order is foreign.
constexpr uint32_t kByteOrderMark = 0x01020304;

// A fingerprint of a model file's bytes, cheap enough to take on every load: four independent
// multiply-xorshift lanes over 8-byte words, the tail through FNV-1a. Not cryptographic: it tells an edited
// or replaced model file from the one the cache was made of, which size and mtime alone may not (a copy that
// keeps the mtime, an edit of the same length within the clock's tick).
class Fingerprint {
 public:
  static constexpr size_t kBlock = 32;
  // `size` a multiple of kBlock.
  void add_blocks(const char* data, size_t size) {
    for (size_t i = 0; i < size; i += kBlock) {
      for (size_t k = 0; k < 4; ++k) {
        uint64_t word;
        std::memcpy(&word, data + i + 8 * k, sizeof word);
        lane_[k] = (lane_[k] ^ word) * kMul;
        lane_[k] ^= lane_[k] >> 32;
      }
    }
    size_ += size;
  }
  uint64_t finish(std::string_view tail) const {
    uint64_t h = size_ + tail.size();
    for (uint64_t l : lane_) {
      h = (h ^ l) * kMul;
      h ^= h >> 29;
    }
    return fnv1a(tail, h);
  }

 private:
  static constexpr uint64_t kMul = 0x9FB21C651E98DF25ull;
  uint64_t lane_[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
  uint64_t size_ = 0;
};

uint64_t fingerprint_of(std::string_view text) {
  Fingerprint f;
  const size_t blocks = text.size() - text.size() % Fingerprint::kBlock;
  f.add_blocks(text.data(), blocks);
  return f.finish(text.substr(blocks));
}

// The same, streamed through a small buffer: reading the JSON whole (allocating, zeroing and copying
// megabytes) cost more than the rest of a cached load.
uint64_t fingerprint_of_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read " + file.string());
  Fingerprint f;
  std::vector<char> buffer(size_t{1} << 18);
  for (;;) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (got < buffer.size()) {  // the end: only the last piece may leave a partial block
      if (in.bad()) throw Error("cannot read " + file.string());
      const size_t blocks = got - got % Fingerprint::kBlock;
      f.add_blocks(buffer.data(), blocks);
      return f.finish(std::string_view(buffer.data() + blocks, got - blocks));
    }
    f.add_blocks(buffer.data(), got);
  }
}

// Everything before the payload: what the cache was made of and by whom.
std::string header(uint64_t json_fingerprint) {
  std::string out(kMagic);
  bytes::put(out, kCacheFormat);
  bytes::put(out, kByteOrderMark);
  bytes::put_text(out, version());
  bytes::put(out, json_fingerprint);
  return out;
}

// The payload of `cache` if it was made of the model file with that fingerprint and is intact, else why not.
std::string_view checked_payload(std::string_view cache, uint64_t json_fingerprint, const std::string& origin) {
  const std::string expected = header(json_fingerprint);
  if (cache.substr(0, expected.size()) != expected) throw Error(origin + " was made of another model file or by another nn-meter");
  cache.remove_prefix(expected.size());
  const auto sum = bytes::take<uint64_t>(cache, origin);
  const std::string_view payload = bytes::take_raw(cache, bytes::take<uint64_t>(cache, origin), origin);
  if (!cache.empty() || fingerprint_of(payload) != sum) throw Error(origin + " is damaged");
  return payload;
}

}  // namespace

fs::path ModelCache::file_for(const fs::path& model_file) { return fs::path(model_file).replace_extension(".trees"); }

KernelRegressor ModelCache::load(const fs::path& model_file) {
  const fs::path cache = file_for(model_file);
  std::error_code ec;
  // A missing or odd model file takes the path below, which reports it as KernelRegressor::load does.
  if (fs::is_regular_file(model_file, ec) && fs::exists(cache, ec)) {
    const std::string origin = "tree cache " + cache.string();
    try {
      const std::string bytes = io::read_file(cache);
      return KernelRegressor::from_cache_payload(checked_payload(bytes, fingerprint_of_file(model_file), origin), origin);
    } catch (const std::exception& e) {
      spdlog::debug("{}; reading {} instead and rewriting the cache", e.what(), model_file.string());
    }
  }
  const std::string text = KernelRegressor::read_model_file(model_file);
  KernelRegressor model = KernelRegressor::from_json_text(text, "model file " + model_file.string());
  store(model, model_file, text);
  return model;
}

void ModelCache::write(const KernelRegressor& model, const fs::path& model_file) {
  try {
    store(model, model_file, io::read_file(model_file));
  } catch (const Error& e) {
    spdlog::debug("no tree cache for {}: {}", model_file.string(), e.what());
  }
}

void ModelCache::store(const KernelRegressor& model, const fs::path& model_file, std::string_view json_text) {
  const fs::path cache = file_for(model_file);
  try {
    const std::string payload = model.cache_payload();
    std::string out = header(fingerprint_of(json_text));
    bytes::put(out, fingerprint_of(payload));
    bytes::put_text(out, payload);
    io::write_file_atomic(cache, out);
  } catch (const Error& e) {
    // A cache is an optimisation: a folder that cannot be written still loads, from its JSON.
    spdlog::debug("no tree cache for {}: {}", model_file.string(), e.what());
  }
}

}  // namespace nnmeter
