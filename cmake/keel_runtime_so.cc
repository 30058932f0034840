// cmake/keel_runtime_so.cc — the one source of libkeelvm.so: the library's code
// all comes from the static keel_vm linked in whole (see cmake/CMakeLists.txt);
// this symbol only gives the shared library a translation unit of its own.
extern "C" const char* keel_runtime_version() { return "0.1.0"; }
