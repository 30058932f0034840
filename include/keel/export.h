/* keel/export.h — KEEL_API, the mark of the runtime's public API.
 *
 * The runtime is compiled with hidden visibility: libkeelvm.so exports exactly the
 * declarations marked KEEL_API in the public headers (keel/vm.h, keel/c_api.h,
 * keel/status.h) and nothing else; cmake/libkeelvm.exports lists them and
 * scripts/runtime-size.sh fails when the library's exports differ. For a program
 * that uses the headers the mark changes nothing.
 */
#ifndef KEEL_EXPORT_H_
#define KEEL_EXPORT_H_

#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
/* The standard attribute syntax: it may follow other attributes ([[nodiscard]]). */
#define KEEL_API [[gnu::visibility("default")]]
/* A private member or nested class of a KEEL_API class that is no part of the API
 * (it would otherwise inherit the class's visibility). */
#define KEEL_LOCAL [[gnu::visibility("hidden")]]
#elif defined(__GNUC__) || defined(__clang__)
#define KEEL_API __attribute__((visibility("default")))
#else
#define KEEL_API
#endif
#ifndef KEEL_LOCAL
#define KEEL_LOCAL
#endif

#endif /* KEEL_EXPORT_H_ */
