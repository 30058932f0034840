# tests/apps/consumer/run_package_test.cmake — ctest script: install the
# keel_runtime component into PREFIX, configure/build the consumer project
# against it with find_package(Keel), write a test model and run the consumer.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
run(${CMAKE_COMMAND} --build ${KEEL_BUILD_DIR} --target keel_vm_shared)
run(${CMAKE_COMMAND} --install ${KEEL_BUILD_DIR} --component keel_runtime --prefix ${PREFIX})
run(${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${WORK}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${PREFIX}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${MAKE_MODEL} ${WORK}/m.keel ${KERNELS} static)
run(${WORK}/build/consumer ${WORK}/m.keel)
if(NOT last_output MATCHES "consumer output scaled 4096 bytes")
  message(FATAL_ERROR "unexpected consumer output:\n${last_output}")
endif()
message(STATUS "${last_output}")
