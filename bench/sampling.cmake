# The sampling benchmark (issue 3). Included by bench/CMakeLists.txt: include(${CMAKE_CURRENT_LIST_DIR}/sampling.cmake)
add_executable(sampling_bench ${CMAKE_CURRENT_LIST_DIR}/sampling_bench.cpp)
target_link_libraries(sampling_bench PRIVATE nnmeter)
