/* nn-Meter plugin ABI: the C contract a plugin library and nn-meter agree on (ABI version 2).
 *
 * A plugin is a shared library (`<classModule>.so` or `lib<classModule>.so` in the plugin folder) that
 * exports one C function, `nnmeter_plugin_info`. It returns the library's description: its ABI version,
 * name and version, and every class it holds with the class's kind, name and function table. Only C types
 * and JSON strings cross the library boundary, so a plugin built with another compiler or standard library
 * still works; exceptions never cross it.
 *
 * This header is plain C, so a plugin can be written in C against it alone. Plugin authors in C++ include
 * nnmeter/plugin.h instead: its bases implement this contract for them.
 *
 * ABI history:
 *   1 — first version: `nnmeter_plugin_find_class` looked classes up by name, methods were named by strings,
 *       `create` reported errors through an out-parameter and `call` through its result buffer.
 *   2 — one entry point `nnmeter_plugin_info` describing the whole library (classes can be listed); every
 *       function of a class's table returns a status and failures are read from the library's `last_error`;
 *       methods are numbered per kind; a library may hold any number of classes.
 *       nn-meter refuses ABI-1 libraries with a message asking to rebuild them.
 */
#ifndef NNMETER_PLUGIN_ABI_H
#define NNMETER_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#define NNMETER_PLUGIN_ABI_VERSION 2

#if defined(_WIN32)
#define NNMETER_PLUGIN_EXPORT __declspec(dllexport)
#else
#define NNMETER_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The values of the enums below are part of the ABI: they are never renumbered, only added to. */

typedef enum nnmeter_plugin_kind {
  NNMETER_PLUGIN_KIND_BACKEND = 1,
  NNMETER_PLUGIN_KIND_KERNEL = 2,
  NNMETER_PLUGIN_KIND_SAMPLER = 3,
  NNMETER_PLUGIN_KIND_PARSER = 4,
  NNMETER_PLUGIN_KIND_OPERATOR = 5,
  NNMETER_PLUGIN_KIND_TESTCASE = 6
} nnmeter_plugin_kind;

/* The methods of each kind. Their JSON arguments and results are those of the methods of the same names
 * of the C++ SDK's bases (nnmeter/plugin.h): an object with one member per parameter, and the return value
 * as JSON (raw bytes for the get_model methods). */
typedef enum nnmeter_backend_method {
  NNMETER_BACKEND_PARAMS = 1,
  NNMETER_BACKEND_IS_AVAILABLE = 2,
  NNMETER_BACKEND_GET_VERSION = 3,
  NNMETER_BACKEND_TEST_CONNECTION = 4,
  NNMETER_BACKEND_TO_BACKEND = 5,
  NNMETER_BACKEND_PROFILE = 6
} nnmeter_backend_method;

typedef enum nnmeter_kernel_method {
  NNMETER_KERNEL_INPUT_TENSOR_SHAPE = 1,
  NNMETER_KERNEL_GET_MODEL = 2
} nnmeter_kernel_method;

typedef enum nnmeter_sampler_method {
  NNMETER_SAMPLER_PRIOR_CONFIG_SAMPLING = 1,
  NNMETER_SAMPLER_FINEGRAINED_CONFIG_SAMPLING = 2
} nnmeter_sampler_method;

typedef enum nnmeter_parser_method {
  NNMETER_PARSER_NEEDED_CONFIG = 1,
  NNMETER_PARSER_GET_FEATURE_BY_CONFIG = 2,
  NNMETER_PARSER_GET_CONFIG_BY_FEATURE = 3
} nnmeter_parser_method;

typedef enum nnmeter_operator_method {
  NNMETER_OPERATOR_OUTPUT_SHAPE = 1,
  NNMETER_OPERATOR_IS_TWO_INPUTS = 2,
  NNMETER_OPERATOR_GET_MODEL = 3
} nnmeter_operator_method;

typedef enum nnmeter_testcase_method {
  NNMETER_TESTCASE_GENERATE_TESTCASE = 1,
  NNMETER_TESTCASE_RUN_TEST = 2,
  NNMETER_TESTCASE_DEPENDS_ON = 3
} nnmeter_testcase_method;

/* What a class can do. Every function returns 0 on success and non-zero on failure; after a failure the
 * library's `last_error`, called on the same thread, gives the one-line reason. */
typedef struct nnmeter_plugin_functions {
  /* Constructs an object from its config (a JSON object) into *out_self. */
  int (*create)(const char* config_json, void** out_self);
  int (*destroy)(void* self);
  /* Calls method `method` (a value of the class's kind's enum) with a JSON argument object. On success
   * *out_result holds the result (JSON text, or raw bytes), *out_size its length; release it with
   * free_buffer. On failure *out_result is left NULL. */
  int (*call)(void* self, uint32_t method, const char* args_json, char** out_result, size_t* out_size);
  int (*free_buffer)(char* buffer);
} nnmeter_plugin_functions;

typedef struct nnmeter_plugin_class {
  uint32_t kind;    /* an nnmeter_plugin_kind */
  const char* name; /* the class name, as written in the meta file's className */
  const nnmeter_plugin_functions* functions;
} nnmeter_plugin_class;

typedef struct nnmeter_plugin_library {
  /* NNMETER_PLUGIN_ABI_VERSION the library was compiled against. It stays the first member in every ABI
   * version, so that nn-meter can read it before trusting the rest of the layout. */
  uint32_t abi_version;
  const char* name;    /* the library's name, for messages and listings */
  const char* version; /* the library's own version string */
  size_t class_count;
  const nnmeter_plugin_class* classes;
  /* The message of the last failed call made on this thread, valid until the next call on it. */
  const char* (*last_error)(void);
} nnmeter_plugin_library;

/* The one symbol nn-meter resolves in a plugin library. The description it returns lives as long as the
 * library is loaded; NULL means the library could not describe itself. */
typedef const nnmeter_plugin_library* (*nnmeter_plugin_info_fn)(void);
#define NNMETER_PLUGIN_ENTRY_POINT "nnmeter_plugin_info"
/* The entry point of ABI 1, looked for only to tell the user that such a library must be rebuilt. */
#define NNMETER_PLUGIN_ABI1_ENTRY_POINT "nnmeter_plugin_find_class"

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // NNMETER_PLUGIN_ABI_H
