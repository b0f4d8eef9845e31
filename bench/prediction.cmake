# The model-level prediction benchmark (issue 6). Included by bench/CMakeLists.txt.
add_executable(prediction_bench ${CMAKE_CURRENT_LIST_DIR}/prediction_bench.cpp)
target_include_directories(prediction_bench PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(prediction_bench PRIVATE nnmeter onnx onnx_proto protobuf::libprotobuf fmt::fmt)

# Splits one model's prediction error into kernel-predictor error and composition error.
add_executable(prediction_oracle ${CMAKE_CURRENT_LIST_DIR}/prediction_oracle.cpp)
target_include_directories(prediction_oracle PRIVATE ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(prediction_oracle PRIVATE nnmeter fmt::fmt)

