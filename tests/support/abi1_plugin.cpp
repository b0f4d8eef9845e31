// A backend plugin as ABI 1 built them, reduced to what identifies it: the lookup-by-name entry point and
// its table's layout. nn-meter must refuse it with the advice to rebuild, without calling anything.
#include <stddef.h>
#include <stdint.h>

#include <cstring>

namespace {

struct abi1_class {
  uint32_t abi_version;
  const char* kind;
  const char* name;
  void* (*create)(const char* config_json, char** error);
  void (*destroy)(void* self);
  int (*call)(void* self, const char* method, const char* args_json, char** result, size_t* result_size);
  void (*free_buffer)(char* buffer);
};

const abi1_class table = {1, "backend", "oldBackend", nullptr, nullptr, nullptr, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) const abi1_class* nnmeter_plugin_find_class(const char* name) {
  return name != nullptr && std::strcmp(name, table.name) == 0 ? &table : nullptr;
}
