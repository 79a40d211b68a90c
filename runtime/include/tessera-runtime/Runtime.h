/*===- tessera-runtime/Runtime.h - Tessera runtime C API ------------------===*\
|*                                                                            *|
|* The C ABI of the Tessera runtime: tensors, tensor files (ONNX TensorProto  *|
|* `.pb` and NumPy `.npy`), and compiled artifacts (a directory holding       *|
|* `manifest.json` and the shared object it names).                           *|
|*                                                                            *|
|* Every fallible function returns a tsr_status_t and writes its results      *|
|* through `out_` parameters only on success. On failure, tsr_last_error()    *|
|* returns a one-line message naming the file, tensor or symbol involved; the *|
|* message is kept per thread until the next failing call on that thread.     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TESSERA_RUNTIME_RUNTIME_H
#define TESSERA_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TSR_API __declspec(dllexport)
#else
#define TSR_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Status
 *===----------------------------------------------------------------------===*/

typedef enum tsr_status_t {
  TSR_OK = 0,
  /* A null pointer, out-of-range index or otherwise invalid argument. */
  TSR_ERROR_INVALID_ARGUMENT = 1,
  /* A file or directory could not be opened, read or written. */
  TSR_ERROR_IO = 2,
  /* A file's contents are malformed (corrupt .pb/.npy, bad manifest). */
  TSR_ERROR_PARSE = 3,
  /* A well-formed value does not match what was expected (dtype, shape). */
  TSR_ERROR_MISMATCH = 4,
  /* A valid but unsupported feature (e.g. string tensors, Fortran order). */
  TSR_ERROR_UNSUPPORTED = 5,
  /* dlopen/dlsym of an artifact's library failed. */
  TSR_ERROR_LOAD = 6,
  /* An allocation failed. */
  TSR_ERROR_OUT_OF_MEMORY = 7,
} tsr_status_t;

/* Returns the message of the last failing call on this thread ("" if none).
 * The pointer stays valid until the next runtime call on this thread. */
TSR_API const char *tsr_last_error(void);

/* Returns a static name for a status code, e.g. "TSR_ERROR_IO". */
TSR_API const char *tsr_status_name(tsr_status_t status);

/*===----------------------------------------------------------------------===*
 * Element types
 *===----------------------------------------------------------------------===*/

/* The values equal ONNX TensorProto.DataType for the same type. */
typedef enum tsr_dtype_t {
  TSR_DTYPE_INVALID = 0,
  TSR_DTYPE_FLOAT32 = 1,
  TSR_DTYPE_UINT8 = 2,
  TSR_DTYPE_INT8 = 3,
  TSR_DTYPE_UINT16 = 4,
  TSR_DTYPE_INT16 = 5,
  TSR_DTYPE_INT32 = 6,
  TSR_DTYPE_INT64 = 7,
  TSR_DTYPE_BOOL = 9,
  TSR_DTYPE_FLOAT16 = 10,
  TSR_DTYPE_FLOAT64 = 11,
  TSR_DTYPE_UINT32 = 12,
  TSR_DTYPE_UINT64 = 13,
  TSR_DTYPE_BFLOAT16 = 16,
} tsr_dtype_t;

/* Returns the manifest spelling ("float32", "bool", ...) or "invalid". */
TSR_API const char *tsr_dtype_name(tsr_dtype_t dtype);

/* Parses a manifest dtype spelling. */
TSR_API tsr_status_t tsr_dtype_from_name(const char *name,
                                         tsr_dtype_t *out_dtype);

/* Returns the size of one element in bytes (bool is 1), or 0 if invalid. */
TSR_API size_t tsr_dtype_size(tsr_dtype_t dtype);

/*===----------------------------------------------------------------------===*
 * Tensors
 *===----------------------------------------------------------------------===*/

/* A dense, contiguous, row-major tensor that owns a 64-byte aligned buffer.
 * The buffer is never null, even for zero-element tensors. */
typedef struct tsr_tensor tsr_tensor_t;

/* Creates a zero-filled tensor. `shape` may be null when `rank` is 0. */
TSR_API tsr_status_t tsr_tensor_create(tsr_dtype_t dtype, size_t rank,
                                       const int64_t *shape,
                                       tsr_tensor_t **out_tensor);

/* Destroys a tensor; null is allowed. */
TSR_API void tsr_tensor_destroy(tsr_tensor_t *tensor);

TSR_API tsr_dtype_t tsr_tensor_dtype(const tsr_tensor_t *tensor);
TSR_API size_t tsr_tensor_rank(const tsr_tensor_t *tensor);
/* Returns `rank` dimensions (not null even for rank 0). */
TSR_API const int64_t *tsr_tensor_shape(const tsr_tensor_t *tensor);
TSR_API int64_t tsr_tensor_num_elements(const tsr_tensor_t *tensor);
TSR_API size_t tsr_tensor_byte_size(const tsr_tensor_t *tensor);
TSR_API void *tsr_tensor_data(tsr_tensor_t *tensor);

/* The tensor's name ("" if unset); read from and written to `.pb` files. */
TSR_API const char *tsr_tensor_name(const tsr_tensor_t *tensor);
TSR_API tsr_status_t tsr_tensor_set_name(tsr_tensor_t *tensor,
                                         const char *name);

/*===----------------------------------------------------------------------===*
 * Tensor files
 *===----------------------------------------------------------------------===*/

/* Reads a serialized ONNX TensorProto. Both raw_data and the typed fields
 * (float_data, int32_data, int64_data, double_data, uint64_data) are accepted,
 * with ONNX's packing rules for narrow types. */
TSR_API tsr_status_t tsr_tensor_read_pb(const char *path,
                                        tsr_tensor_t **out_tensor);

/* Writes a TensorProto with name, dims, data_type and raw_data. */
TSR_API tsr_status_t tsr_tensor_write_pb(const tsr_tensor_t *tensor,
                                         const char *path);

/* Reads a NumPy `.npy` file (format versions 1, 2 and 3, C order, either
 * byte order). bfloat16 has no NumPy spelling and is not supported. */
TSR_API tsr_status_t tsr_tensor_read_npy(const char *path,
                                         tsr_tensor_t **out_tensor);

/* Writes a `.npy` file (version 1, or 2 when the header needs it). */
TSR_API tsr_status_t tsr_tensor_write_npy(const tsr_tensor_t *tensor,
                                          const char *path);

/*===----------------------------------------------------------------------===*
 * Artifacts
 *===----------------------------------------------------------------------===*/

/* A loaded artifact: its parsed manifest and its opened library. */
typedef struct tsr_artifact tsr_artifact_t;

/* One input or output as declared by the manifest. The pointers stay valid
 * for the lifetime of the artifact. */
typedef struct tsr_tensor_info_t {
  const char *name;
  tsr_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
} tsr_tensor_info_t;

/* Parses `dir`/manifest.json, then dlopens the library it names and looks up
 * its entry symbol. */
TSR_API tsr_status_t tsr_artifact_load(const char *dir,
                                       tsr_artifact_t **out_artifact);

/* Unloads an artifact; null is allowed. */
TSR_API void tsr_artifact_destroy(tsr_artifact_t *artifact);

/* Manifest fields: "mode" and "target" ("" if absent). */
TSR_API const char *tsr_artifact_mode(const tsr_artifact_t *artifact);
TSR_API const char *tsr_artifact_target(const tsr_artifact_t *artifact);

TSR_API size_t tsr_artifact_num_inputs(const tsr_artifact_t *artifact);
TSR_API size_t tsr_artifact_num_outputs(const tsr_artifact_t *artifact);
TSR_API tsr_status_t tsr_artifact_input_info(const tsr_artifact_t *artifact,
                                             size_t index,
                                             tsr_tensor_info_t *out_info);
TSR_API tsr_status_t tsr_artifact_output_info(const tsr_artifact_t *artifact,
                                              size_t index,
                                              tsr_tensor_info_t *out_info);

/* Checks `tensor` against input `index`: TSR_ERROR_MISMATCH with a message
 * naming the input and the expected and actual dtype or shape. */
TSR_API tsr_status_t tsr_artifact_check_input(const tsr_artifact_t *artifact,
                                              size_t index,
                                              const tsr_tensor_t *tensor);

/* Creates a zero-filled tensor for output `index`, named after it. */
TSR_API tsr_status_t tsr_artifact_create_output(const tsr_artifact_t *artifact,
                                                size_t index,
                                                tsr_tensor_t **out_tensor);

/* Checks every input and output against the manifest, then calls the entry
 * with args = {inputs..., outputs...}. */
TSR_API tsr_status_t tsr_artifact_invoke(const tsr_artifact_t *artifact,
                                         const tsr_tensor_t *const *inputs,
                                         size_t num_inputs,
                                         tsr_tensor_t *const *outputs,
                                         size_t num_outputs);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_RUNTIME_H */
