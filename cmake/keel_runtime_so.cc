// cmake/keel_runtime_so.cc — the one source of libkeelvm.so of its own: the
// library's code all comes from the static keel_vm linked in whole (see
// cmake/CMakeLists.txt). It defines nothing; CMake needs a source per library.
