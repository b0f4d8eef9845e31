/* A backend written in C against nnmeter/plugin_abi.h alone: the plugin contract is the C ABI, not the C++
 * SDK of nnmeter/plugin.h, so a library built against ABI 2 without the SDK still loads and answers. */
#include <nnmeter/plugin_abi.h>

#include <stdlib.h>
#include <string.h>

static _Thread_local const char* c_last_error = "";

static int c_fail(const char* message) {
  c_last_error = message;
  return 1;
}

static int c_create(const char* config_json, void** out_self) {
  if (config_json == NULL || out_self == NULL) return c_fail("create called without config or out_self");
  *out_self = malloc(1);
  return *out_self == NULL ? c_fail("out of memory") : 0;
}

static int c_destroy(void* self) {
  free(self);
  return 0;
}

static int c_answer(const char* text, char** out_result, size_t* out_size) {
  const size_t size = strlen(text);
  *out_result = malloc(size + 1);
  if (*out_result == NULL) return c_fail("out of memory");
  memcpy(*out_result, text, size + 1);
  if (out_size != NULL) *out_size = size;
  return 0;
}

static int c_call(void* self, uint32_t method, const char* args_json, char** out_result, size_t* out_size) {
  if (self == NULL || args_json == NULL || out_result == NULL) return c_fail("call without object or arguments");
  *out_result = NULL;
  switch (method) {
    case NNMETER_BACKEND_PARAMS: return c_answer("[]", out_result, out_size);
    case NNMETER_BACKEND_IS_AVAILABLE: return c_answer("true", out_result, out_size);
    case NNMETER_BACKEND_GET_VERSION: return c_answer("\"c-1\"", out_result, out_size);
    case NNMETER_BACKEND_TEST_CONNECTION: return c_answer("\"connected from C\"", out_result, out_size);
    default: return c_fail("the C backend does not implement this method");
  }
}

static int c_free_buffer(char* buffer) {
  free(buffer);
  return 0;
}

static const char* c_get_last_error(void) { return c_last_error; }

static const nnmeter_plugin_functions c_functions = {c_create, c_destroy, c_call, c_free_buffer};
static const nnmeter_plugin_class c_classes[] = {{NNMETER_PLUGIN_KIND_BACKEND, "cBackend", &c_functions}};
static const nnmeter_plugin_library c_library = {NNMETER_PLUGIN_ABI_VERSION, "c_abi", "1.0", 1, c_classes,
                                                 c_get_last_error};

NNMETER_PLUGIN_EXPORT const nnmeter_plugin_library* nnmeter_plugin_info(void) { return &c_library; }
