# The regressor benchmark (issue 5, training half). Included by bench/CMakeLists.txt:
# include(${CMAKE_CURRENT_LIST_DIR}/predictor.cmake)
add_executable(predictor_bench ${CMAKE_CURRENT_LIST_DIR}/predictor_bench.cpp)
target_include_directories(predictor_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests)
target_link_libraries(predictor_bench PRIVATE nnmeter)

# Accuracy against profiled samples on a fresh profiled test set (issue 5, real onednn_cpu data).
add_executable(builder_bench ${CMAKE_CURRENT_LIST_DIR}/builder_bench.cpp)
target_include_directories(builder_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(builder_bench PRIVATE nnmeter fmt::fmt)
