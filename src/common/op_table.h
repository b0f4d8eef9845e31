// The one shape of every op table (the front end's op rules, onednn_cpu's lowerings, the TFLite export's
// ops, xnnpack_cpu's ops): each op-family file adds its entries through one static registration when the
// library loads, and dispatch finds an entry by its key. Registrations run during static initialisation,
// before anything looks an op up, so the table needs no lock.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

namespace nnmeter {

// `Def` is the table's entry type; `key` is the member of Def (a pointer to member) entries are found by.
template <class Def, auto key>
class OpTable {
 public:
  static const std::vector<Def>& entries() { return storage(); }

  static void add(std::vector<Def> defs) {
    for (auto& d : defs) storage().push_back(std::move(d));
  }

  template <class Key>
  static const Def* find(const Key& k) {
    for (const auto& d : storage())
      if (d.*key == k) return &d;
    return nullptr;
  }

  // The keys of the entries `keep` accepts, sorted: the lists messages and tests name.
  template <class Keep>
  static auto sorted_keys(Keep keep) {
    std::vector<std::decay_t<decltype(std::declval<const Def&>().*key)>> keys;
    for (const auto& d : storage())
      if (keep(d)) keys.push_back(d.*key);
    std::sort(keys.begin(), keys.end());
    return keys;
  }

 private:
  static std::vector<Def>& storage() {
    static std::vector<Def> defs;
    return defs;
  }
};

}  // namespace nnmeter
