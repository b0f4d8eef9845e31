// Native-layout byte packing for files a machine writes and reads back itself (the predictor folder's
// tree cache, regressors/model_cache.h): values appended to a string, taken back from the front of a view.
// A view too short for what is taken is an Error naming `origin`, never a read past its end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter::bytes {

template <class T>
void put(std::string& out, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
void put_array(std::string& out, const std::vector<T>& values) {
  static_assert(std::is_trivially_copyable_v<T>);
  put<uint64_t>(out, values.size());
  // An empty vector's data() may be null, which memcpy must not be given even for zero bytes.
  if (!values.empty()) out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

inline void put_text(std::string& out, std::string_view text) {
  put<uint64_t>(out, text.size());
  out.append(text);
}

inline std::string_view take_raw(std::string_view& in, uint64_t size, const std::string& origin) {
  if (in.size() < size) throw Error(origin + " is truncated");
  const std::string_view head = in.substr(0, static_cast<size_t>(size));
  in.remove_prefix(static_cast<size_t>(size));
  return head;
}

template <class T>
T take(std::string_view& in, const std::string& origin) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, take_raw(in, sizeof value, origin).data(), sizeof value);
  return value;
}

template <class T>
std::vector<T> take_array(std::string_view& in, const std::string& origin) {
  const auto count = take<uint64_t>(in, origin);
  // Checked before multiplying, so a damaged count cannot wrap around to a small size.
  if (count > in.size() / sizeof(T)) throw Error(origin + " is truncated");
  std::vector<T> values(static_cast<size_t>(count));
  const std::string_view raw = take_raw(in, count * sizeof(T), origin);
  if (!values.empty()) std::memcpy(values.data(), raw.data(), raw.size());
  return values;
}

inline std::string take_text(std::string_view& in, const std::string& origin) {
  return std::string(take_raw(in, take<uint64_t>(in, origin), origin));
}

}  // namespace nnmeter::bytes
