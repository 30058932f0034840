/* include/keel/dtype_list.h — the one list of Keel's element types.
 *
 * Every layer derives its dtype vocabulary from KEEL_DTYPE_LIST: the compiler's
 * IR (ir::DType), the executable format's C++ view (ser::DType, checked against
 * the FlatBuffers schema's keel.fb.DType at compile time), the C++ API
 * (keel::DataType) and the C API (keel_dtype_t). Adding a type means one line
 * here and one enum value in serialization/executable.fbs (the build fails
 * until both agree).
 *
 *   X(Token, value, bytes, "name", kind)
 *     Token  enum suffix: k<Token> in C++, KEEL_<TOKEN> in C (spelled there)
 *     value  the numbering stored in executables: never reuse or renumber
 *     bytes  storage size of one element
 *     name   short name used in messages, traces and the IR printer
 *     kind   KEEL_DTYPE_FLOAT, KEEL_DTYPE_SIGNED, KEEL_DTYPE_UNSIGNED or KEEL_DTYPE_BOOL
 *
 * Plain C (included by c_api.h); no declarations, only the macro.
 */
#ifndef KEEL_DTYPE_LIST_H_
#define KEEL_DTYPE_LIST_H_

#define KEEL_DTYPE_FLOAT 0
#define KEEL_DTYPE_SIGNED 1
#define KEEL_DTYPE_UNSIGNED 2
#define KEEL_DTYPE_BOOL 3

#define KEEL_DTYPE_LIST(X)                          \
  X(F32, 0, 4, "f32", KEEL_DTYPE_FLOAT)             \
  X(F16, 1, 2, "f16", KEEL_DTYPE_FLOAT)             \
  X(BF16, 2, 2, "bf16", KEEL_DTYPE_FLOAT)           \
  X(F64, 3, 8, "f64", KEEL_DTYPE_FLOAT)             \
  X(I8, 4, 1, "i8", KEEL_DTYPE_SIGNED)              \
  X(I16, 5, 2, "i16", KEEL_DTYPE_SIGNED)            \
  X(I32, 6, 4, "i32", KEEL_DTYPE_SIGNED)            \
  X(I64, 7, 8, "i64", KEEL_DTYPE_SIGNED)            \
  X(U8, 8, 1, "u8", KEEL_DTYPE_UNSIGNED)            \
  X(Bool, 9, 1, "bool", KEEL_DTYPE_BOOL)            \
  X(U16, 10, 2, "u16", KEEL_DTYPE_UNSIGNED)         \
  X(U32, 11, 4, "u32", KEEL_DTYPE_UNSIGNED)         \
  X(U64, 12, 8, "u64", KEEL_DTYPE_UNSIGNED)

/* The largest value in the list (executables with a larger one are rejected). */
#define KEEL_DTYPE_MAX_VALUE 12

#endif /* KEEL_DTYPE_LIST_H_ */
