# nnmeter_add_plugin(<module> SOURCES <files...> [LIBRARIES <libs...>])
#
# Builds an nn-Meter plugin library named exactly <module>.so, the name a meta file's classModule gives.
# Out of tree, include this file from an nn-Meter checkout or install; a plugin then needs five lines:
#
#   cmake_minimum_required(VERSION 3.22)
#   project(my_backend CXX)
#   include(/path/to/nn-meter/cmake/NNMeterPlugin.cmake)
#   nnmeter_add_plugin(backend SOURCES backend.cpp)
#
# The plugin sees only include/nnmeter/plugin.h and plugin_abi.h (and nlohmann-json); it does not link libnnmeter.
get_filename_component(NNMETER_PLUGIN_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../include" ABSOLUTE)
if(NOT EXISTS "${NNMETER_PLUGIN_INCLUDE_DIR}/nnmeter/plugin.h")
  get_filename_component(NNMETER_PLUGIN_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../include" ABSOLUTE)
endif()

function(nnmeter_add_plugin module)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT TARGET nlohmann_json::nlohmann_json)
    find_package(nlohmann_json 3.10 REQUIRED)
  endif()
  add_library(${module} MODULE ${ARG_SOURCES})
  set_target_properties(${module} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_compile_features(${module} PRIVATE cxx_std_17)
  target_include_directories(${module} PRIVATE "${NNMETER_PLUGIN_INCLUDE_DIR}")
  target_link_libraries(${module} PRIVATE nlohmann_json::nlohmann_json ${ARG_LIBRARIES})
endfunction()
