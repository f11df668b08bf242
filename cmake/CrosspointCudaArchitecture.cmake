# crosspoint_visible_cuda_architecture(<out-var>)
# The CUDA architecture of the first GPU nvidia-smi lists (8.9 -> 89; 9.0 -> 90a, since the
# Hopper kernels need the "a" target; 10.0 -> 100a), or 90a when no GPU answers.
function(crosspoint_visible_cuda_architecture out_var)
  set(arch 90a)
  find_program(CROSSPOINT_NVIDIA_SMI nvidia-smi)
  if(CROSSPOINT_NVIDIA_SMI)
    execute_process(COMMAND ${CROSSPOINT_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE caps RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 20)
    if(rc EQUAL 0 AND caps MATCHES "^([0-9]+)\\.([0-9]+)")
      set(arch "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      if(CMAKE_MATCH_1 GREATER_EQUAL 9)
        set(arch "${arch}a")
      endif()
    endif()
  endif()
  set(${out_var} ${arch} PARENT_SCOPE)
endfunction()
