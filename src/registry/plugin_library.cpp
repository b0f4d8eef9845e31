#include "registry/plugin_library.h"

#include "registry/python_plugin.h"

#include <dlfcn.h>

#include <mutex>

namespace nnmeter {

namespace {

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

std::string first_line(const char* text) {
  if (text == nullptr) return {};
  const std::string_view view(text);
  return std::string(view.substr(0, view.find('\n')));
}

// A description this large is garbage, not a library: reading that many entries would only crash.
constexpr size_t kMaxClasses = 100000;

std::string wrong_abi(const fs::path& path, uint32_t abi) {
  const std::string rebuild = "rebuild it against ABI " + std::to_string(NNMETER_PLUGIN_ABI_VERSION) +
                              " (include/nnmeter/plugin.h)";
  if (abi > NNMETER_PLUGIN_ABI_VERSION)
    return "plugin library " + path.string() + " was built against nn-Meter plugin ABI " + std::to_string(abi) +
           ", newer than this nn-meter's ABI " + std::to_string(NNMETER_PLUGIN_ABI_VERSION) + "; " + rebuild +
           ", or use an nn-meter that reads ABI " + std::to_string(abi);
  return "plugin library " + path.string() + " was built against nn-Meter plugin ABI " + std::to_string(abi) + "; " +
         rebuild;
}

}  // namespace

std::string plugin_kind_name(uint32_t kind) {
  switch (kind) {
    case NNMETER_PLUGIN_KIND_BACKEND: return "backend";
    case NNMETER_PLUGIN_KIND_KERNEL: return "kernel";
    case NNMETER_PLUGIN_KIND_SAMPLER: return "sampler";
    case NNMETER_PLUGIN_KIND_PARSER: return "parser";
    case NNMETER_PLUGIN_KIND_OPERATOR: return "operator";
    case NNMETER_PLUGIN_KIND_TESTCASE: return "testcase";
  }
  return "kind " + std::to_string(kind);
}

std::shared_ptr<const PluginLibrary> PluginLibrary::open(const fs::path& file, const std::string& module) {
  auto library = std::make_shared<PluginLibrary>();
  library->path_ = file;
  library->handle_ = open_library(file, module);
  void* handle = library->handle_.get();
  auto describe = reinterpret_cast<nnmeter_plugin_info_fn>(::dlsym(handle, NNMETER_PLUGIN_ENTRY_POINT));
  if (describe == nullptr) {
    if (::dlsym(handle, NNMETER_PLUGIN_ABI1_ENTRY_POINT) != nullptr) throw Error(wrong_abi(file, 1));
    throw Error("cannot load module '" + module + "' from " + file.parent_path().string() + ": " +
                file.filename().string() + " does not export " + NNMETER_PLUGIN_ENTRY_POINT +
                " (declare its classes with NNMETER_PLUGIN from nnmeter/plugin.h)");
  }
  const nnmeter_plugin_library* info = describe();
  const std::string rebuild = "; rebuild it with NNMETER_PLUGIN from include/nnmeter/plugin.h";
  if (info == nullptr)
    throw Error("plugin library " + file.string() + " returned no description from " + NNMETER_PLUGIN_ENTRY_POINT +
                rebuild);
  if (info->abi_version != NNMETER_PLUGIN_ABI_VERSION) throw Error(wrong_abi(file, info->abi_version));
  const auto malformed = [&](const std::string& what) {
    return Error("plugin library " + file.string() + " describes itself wrongly (" + what + ")" + rebuild);
  };
  if (info->last_error == nullptr) throw malformed("no last_error function");
  if (info->class_count == 0) throw malformed("no class");
  if (info->class_count > kMaxClasses) throw malformed(std::to_string(info->class_count) + " classes");
  if (info->classes == nullptr) throw malformed("a class count but no classes");
  library->info_ = info;
  library->name_ = info->name != nullptr ? info->name : "";
  library->version_ = info->version != nullptr ? info->version : "";
  for (size_t i = 0; i < info->class_count; ++i) {
    const nnmeter_plugin_class& cls = info->classes[i];
    if (cls.name == nullptr || *cls.name == '\0') throw malformed("class " + std::to_string(i + 1) + " has no name");
    const nnmeter_plugin_functions* f = cls.functions;
    if (f == nullptr || f->create == nullptr || f->destroy == nullptr || f->call == nullptr || f->free_buffer == nullptr)
      throw malformed("class '" + std::string(cls.name) + "' lacks functions");
    if (library->find(cls.name) != nullptr) throw malformed("two classes named '" + std::string(cls.name) + "'");
    library->classes_.push_back(Class{cls.name, plugin_kind_name(cls.kind), &cls});
  }
  return library;
}

const PluginLibrary::Class* PluginLibrary::find(const std::string& class_name) const {
  for (const Class& c : classes_)
    if (c.name == class_name) return &c;
  return nullptr;
}

std::string PluginLibrary::last_error() const {
  std::string reason = first_line(info_->last_error());
  return reason.empty() ? "no reason given" : reason;
}

Json PluginObject::call(const PluginMethod& method, const Json& args) const {
  const std::string text = call_json(method, args);
  try {
    return Json::parse(text);
  } catch (const Json::parse_error&) {
    throw Error(label() + " returned malformed JSON from " + std::string(method.name));
  }
}

namespace {

// A C++ class of a shared library, through its C table.
class NativePluginObject final : public PluginObject {
 public:
  NativePluginObject(std::shared_ptr<const PluginLibrary> library, const nnmeter_plugin_functions* functions,
                     void* self, std::string label)
      : library_(std::move(library)), functions_(functions), self_(self), label_(std::move(label)) {}
  // A failing destructor has nobody left to tell: its status is dropped.
  ~NativePluginObject() override { functions_->destroy(self_); }
  NativePluginObject(const NativePluginObject&) = delete;
  NativePluginObject& operator=(const NativePluginObject&) = delete;

  std::string call_bytes(const PluginMethod& method, const Json& args) const override {
    char* result = nullptr;
    size_t size = 0;
    const std::string args_text = args.dump();
    if (functions_->call(self_, method.id, args_text.c_str(), &result, &size) != 0) {
      const std::string reason = library_->last_error();
      if (result != nullptr) functions_->free_buffer(result);
      throw Error(label_ + " failed in " + std::string(method.name) + ": " + reason);
    }
    if (result == nullptr) return {};
    std::string text(result, size);
    functions_->free_buffer(result);
    return text;
  }

 protected:
  const std::string& label() const override { return label_; }

 private:
  std::shared_ptr<const PluginLibrary> library_;  // keeps the code mapped while the instance lives
  const nnmeter_plugin_functions* functions_;
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
  out.library_ = PluginLibrary::open(out.library_path_, module);
  const PluginLibrary::Class* found = out.library_->find(class_name);
  if (found == nullptr) {
    std::string names;
    for (const auto& c : out.library_->classes()) names += (names.empty() ? "" : ", ") + c.name;
    throw Error("module '" + module + "' in " + package_location.string() + " has no class '" + class_name +
                "' (it has " + names + "; fix className in the meta file, or list the class in NNMETER_PLUGIN)");
  }
  if (found->kind != expected_kind)
    throw Error("class '" + class_name + "' in " + out.library_path_.string() + " is a " + found->kind + ", not a " +
                expected_kind);
  out.cls_ = found->table;
  return out;
}

std::unique_ptr<PluginObject> PluginClass::create(const Json& config) const {
  if (library_ == nullptr) return create_python_plugin_object(library_path_, class_name_, kind_, name_, config);
  const std::string config_text = config.dump();
  const std::string label = "class '" + class_name_ + "' of " + library_path_.string();
  void* self = nullptr;
  if (cls_->functions->create(config_text.c_str(), &self) != 0)
    throw Error(label + " could not be constructed: " + library_->last_error());
  if (self == nullptr) throw Error(label + " could not be constructed: its create reported success but gave no object");
  return std::make_unique<NativePluginObject>(library_, cls_->functions, self, label);
}

}  // namespace nnmeter
