# crosspoint_library(NAME <target> DIR <folder> [DEPS <targets...>])
# Builds every *.cc in the folder (and *.cc in its cpu/ subfolder; *.cu in cuda/ when the
# CUDA backend is on) into one static library. The DEPS list is the folder's row in
# ARCHITECTURE.md: a header from any other folder fails to compile or link.
function(crosspoint_library)
  cmake_parse_arguments(ARG "" "NAME;DIR" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${ARG_DIR}/*.cc ${ARG_DIR}/cpu/*.cc)
  if(CROSSPOINT_HAVE_CUDA)
    file(GLOB cuda_sources CONFIGURE_DEPENDS ${ARG_DIR}/cuda/*.cu ${ARG_DIR}/cuda/*.cc)
    list(APPEND sources ${cuda_sources})
  endif()
  if(sources)
    add_library(${ARG_NAME} STATIC ${sources})
    # Unity batches of the C++ sources (not the .cu files): a build spends most of its time
    # parsing the same headers (fmt, nlohmann/json, CLI11); a library's files therefore keep
    # their file-local names distinct.
    set_target_properties(${ARG_NAME} PROPERTIES UNITY_BUILD ${CROSSPOINT_UNITY_BUILD})
    target_include_directories(${ARG_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${ARG_NAME} PUBLIC ${ARG_DEPS})
    if(CROSSPOINT_HAVE_CUDA)
      target_compile_definitions(${ARG_NAME} PUBLIC CROSSPOINT_HAVE_CUDA=1)
      if(cuda_sources)
        target_link_libraries(${ARG_NAME} PUBLIC CUDA::cudart CUDA::cublasLt)
      endif()
    endif()
  else()
    add_library(${ARG_NAME} INTERFACE)
    target_include_directories(${ARG_NAME} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${ARG_NAME} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# crosspoint_test(NAME <binary> DIR <tests folder> DEPS <targets...>)
# One GoogleTest binary per tests/ folder from its test_*.cc files.
function(crosspoint_test)
  cmake_parse_arguments(ARG "" "NAME;DIR" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${ARG_DIR}/test_*.cc)
  if(NOT sources)
    return()
  endif()
  add_executable(${ARG_NAME} ${sources})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  # GoogleTest and the JSON library are in nearly every test file: parsed once per binary.
  if(CROSSPOINT_TEST_PCH)
    target_precompile_headers(${ARG_NAME} PRIVATE <gtest/gtest.h> <nlohmann/json.hpp> <string> <vector>)
  endif()
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_compile_definitions(${ARG_NAME} PRIVATE
    CROSSPOINT_FIXTURES_DIR="${PROJECT_SOURCE_DIR}/tests/fixtures"
    CROSSPOINT_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    CROSSPOINT_BINARY="$<TARGET_FILE:crosspoint>")
  add_dependencies(${ARG_NAME} crosspoint)
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
endfunction()
