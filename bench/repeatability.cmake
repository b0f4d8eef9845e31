# How well measurements repeat between runs, old protocol against new (issue: latency you can trust).
add_executable(repeatability_bench ${CMAKE_CURRENT_LIST_DIR}/repeatability_bench.cpp)
target_include_directories(repeatability_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(repeatability_bench PRIVATE nnmeter fmt::fmt)
