#include "registry/plugin_library.h"

#include "registry/python_plugin.h"

#include <dlfcn.h>

#include <mutex>

namespace nnmeter {

namespace {

std::string take_buffer(const nnmeter_plugin_class* cls, char* buffer, size_t size) {
  if (buffer == nullptr) return {};
  std::string out(buffer, size);
  cls->free_buffer(buffer);
  return out;
}

fs::path find_library_file(const fs::path& package_location, const std::string& module) {
  for (const std::string& name : {module + ".so", "lib" + module + ".so"}) {
    const fs::path candidate = package_location / name;
    if (fs::exists(candidate)) return candidate;
  }
  throw Error("cannot load module '" + module + "' from " + package_location.string() + ": neither " + module +
              ".so nor lib" + module + ".so exists there (build the plugin, or fix classModule in the meta file)");
}

std::shared_ptr<void> open_library(const fs::path& path, const std::string& module) {
  // dlerror() is process-global state: serialize the open + error read.
  static std::mutex dl_mutex;
  std::lock_guard lock(dl_mutex);
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = ::dlerror();
    throw Error("cannot load module '" + module + "' from " + path.parent_path().string() + ": " +
                (reason != nullptr ? reason : "unknown dlopen error"));
  }
  return std::shared_ptr<void>(handle, [](void* h) { ::dlclose(h); });
}

}  // namespace

Json PluginObject::call(const std::string& method, const Json& args) const {
  const std::string text = call_json(method, args);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error&) {
    throw Error(label() + " returned malformed JSON from " + method);
  }
}

namespace {

// A C++ class of a shared library, through its C table.
class NativePluginObject final : public PluginObject {
 public:
  NativePluginObject(std::shared_ptr<void> library, const nnmeter_plugin_class* cls, void* self, std::string label)
      : library_(std::move(library)), cls_(cls), self_(self), label_(std::move(label)) {}
  ~NativePluginObject() override { cls_->destroy(self_); }
  NativePluginObject(const NativePluginObject&) = delete;
  NativePluginObject& operator=(const NativePluginObject&) = delete;

  std::string call_bytes(const std::string& method, const Json& args) const override {
    char* result = nullptr;
    size_t size = 0;
    const std::string args_text = args.dump();
    const int rc = cls_->call(self_, method.c_str(), args_text.c_str(), &result, &size);
    std::string text = take_buffer(cls_, result, size);
    if (rc != 0) throw Error(label_ + " failed in " + method + ": " + text);
    return text;
  }

 protected:
  const std::string& label() const override { return label_; }

 private:
  std::shared_ptr<void> library_;  // keeps the code mapped while the instance lives
  const nnmeter_plugin_class* cls_;
  void* self_;
  std::string label_;
};

}  // namespace

PluginClass PluginClass::load(const fs::path& package_location, const std::string& module,
                              const std::string& class_name, const std::string& expected_kind, const std::string& name) {
  std::error_code ec;
  if (!fs::is_directory(package_location, ec))
    throw Error("cannot load module '" + module + "' from " + package_location.string() +
                ": package location is not a folder");
  PluginClass out;
  out.class_name_ = class_name;
  out.kind_ = expected_kind;
  out.name_ = name;
  const fs::path python_module = package_location / (module + ".py");
  if (!fs::exists(package_location / (module + ".so")) && !fs::exists(package_location / ("lib" + module + ".so")) &&
      fs::is_regular_file(python_module, ec)) {
    out.library_path_ = python_module;
    return out;
  }
  out.library_path_ = find_library_file(package_location, module);
  out.library_ = open_library(out.library_path_, module);
  auto find = reinterpret_cast<nnmeter_plugin_find_class_fn>(::dlsym(out.library_.get(), NNMETER_PLUGIN_ENTRY_POINT));
  if (find == nullptr)
    throw Error("cannot load module '" + module + "' from " + package_location.string() + ": " +
                out.library_path_.filename().string() + " does not export " + NNMETER_PLUGIN_ENTRY_POINT +
                " (declare the classes with NNMETER_PLUGIN_CLASSES from nnmeter/plugin.h)");
  out.cls_ = find(class_name.c_str());
  if (out.cls_ == nullptr)
    throw Error("module '" + module + "' in " + package_location.string() + " has no class '" + class_name +
                "' (list it in NNMETER_PLUGIN_CLASSES, or fix className in the meta file)");
  if (out.cls_->abi_version != NNMETER_PLUGIN_ABI_VERSION)
    throw Error("class '" + class_name + "' in " + out.library_path_.string() + " was built for plugin ABI " +
                std::to_string(out.cls_->abi_version) + " but this nn-meter uses ABI " +
                std::to_string(NNMETER_PLUGIN_ABI_VERSION) + ": rebuild the plugin against this nn-meter's plugin.h");
  const std::string kind = out.cls_->kind != nullptr ? out.cls_->kind : "";
  if (kind != expected_kind)
    throw Error("class '" + class_name + "' in " + out.library_path_.string() + " is a " + kind + ", not a " +
                expected_kind);
  return out;
}

std::unique_ptr<PluginObject> PluginClass::create(const Json& config) const {
  if (library_ == nullptr) return create_python_plugin_object(library_path_, class_name_, kind_, name_, config);
  char* error = nullptr;
  const std::string config_text = config.dump();
  void* self = cls_->create(config_text.c_str(), &error);
  const std::string label = "class '" + class_name_ + "' of " + library_path_.string();
  if (self == nullptr) {
    std::string reason = error != nullptr ? std::string(error) : "no reason given";
    if (error != nullptr) cls_->free_buffer(error);
    throw Error(label + " could not be constructed: " + reason);
  }
  return std::make_unique<NativePluginObject>(library_, cls_, self, label);
}

}  // namespace nnmeter
