/*===- tessera-runtime/Runtime.h - Tessera runtime C API ------------------===*\
|*                                                                            *|
|* The C ABI of the Tessera runtime: tensors, tensor files (ONNX TensorProto  *|
|* `.pb`, NumPy `.npy` and `.npz`), compiled artifacts (a directory holding   *|
|* `manifest.json` and the shared object it names), training datasets and    *|
|* the training loop, and the memory accounting of compiled code.            *|
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
  /* Training stopped: the loss of a step was nan or infinite. */
  TSR_ERROR_NOT_FINITE = 8,
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
/* The buffer: a device pointer for a tensor in device memory
 * (tsr_tensor_placement). */
TSR_API void *tsr_tensor_data(tsr_tensor_t *tensor);

/* The tensor's name ("" if unset); read from and written to `.pb` files. */
TSR_API const char *tsr_tensor_name(const tsr_tensor_t *tensor);
TSR_API tsr_status_t tsr_tensor_set_name(tsr_tensor_t *tensor,
                                         const char *name);

/* Where a tensor's buffer lives. tsr_tensor_create, the file readers, the
 * datasets and the trainer make host tensors; tsr_tensor_create_placed
 * (Device.h) makes tensors of every placement. */
typedef enum tsr_placement_t {
  /* Ordinary (pageable) host memory. */
  TSR_PLACEMENT_HOST = 0,
  /* Memory of a CUDA device (cudaMalloc): the host cannot read it. */
  TSR_PLACEMENT_DEVICE = 1,
  /* Page-locked host memory (cudaMallocHost): host memory that a device
   * copies from and to asynchronously. */
  TSR_PLACEMENT_PINNED_HOST = 2,
} tsr_placement_t;

TSR_API tsr_placement_t tsr_tensor_placement(const tsr_tensor_t *tensor);

/* Returns the manifest spelling ("host", "device", "pinned-host"), or
 * "invalid". */
TSR_API const char *tsr_placement_name(tsr_placement_t placement);

/*===----------------------------------------------------------------------===*
 * Tensor files
 *===----------------------------------------------------------------------===*/

/* Reads a serialized ONNX TensorProto. Both raw_data and the typed fields
 * (float_data, int32_data, int64_data, double_data, uint64_data) are accepted,
 * with ONNX's packing rules for narrow types. */
TSR_API tsr_status_t tsr_tensor_read_pb(const char *path,
                                        tsr_tensor_t **out_tensor);

/* Writes a TensorProto with name, dims, data_type and raw_data. The writers
 * below read the buffer on the host: a tensor in device memory is refused
 * (TSR_ERROR_MISMATCH). */
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

/* What an input or output is for: the manifest's "role". An input without a
 * role is TSR_ROLE_DATA; an output without one is TSR_ROLE_NONE. */
typedef enum tsr_role_t {
  TSR_ROLE_NONE = 0,
  /* Inputs: a batch of samples, and of their labels. */
  TSR_ROLE_DATA = 1,
  TSR_ROLE_LABEL = 2,
  /* Inputs: trained weights (initialized from the ONNX model), and optimizer
   * state (initialized to a constant). Outputs: their values after a step. */
  TSR_ROLE_PARAM = 3,
  TSR_ROLE_STATE = 4,
  /* Outputs: the scalar loss of a step, a value only reported, and the
   * gradient of the loss with respect to an input. */
  TSR_ROLE_LOSS = 5,
  TSR_ROLE_METRIC = 6,
  TSR_ROLE_GRAD = 7,
  /* Input: an int64 scalar the trainer sets before each step to the 0-based
   * step number s, or s * N + r for dp rank r of N (the stream dropout masks
   * are drawn from), plus seed * 2^40 (tsr_trainer_set_order). */
  TSR_ROLE_RNG = 8,
  /* Input: an int64 scalar the trainer sets to 1 before a step after which
   * the data-parallel ranks' parameters must agree (the last step of
   * tsr_trainer_run), else 0. Local SGD averages on such a step. */
  TSR_ROLE_SYNC = 9,
} tsr_role_t;

/* Returns the manifest spelling ("param", ...), or "" for TSR_ROLE_NONE. */
TSR_API const char *tsr_role_name(tsr_role_t role);

/* One input or output as declared by the manifest. The pointers stay valid
 * for the lifetime of the artifact. */
typedef struct tsr_tensor_info_t {
  const char *name;
  tsr_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  tsr_role_t role;
  /* A param or state output: the index of the input it replaces after each
   * step; otherwise -1. */
  int64_t updates;
  /* A grad output: the index of the input it is the gradient for; else -1. */
  int64_t of;
  /* A state input: the value of every element before the first step. */
  double init;
  /* The whole tensor of which this rank holds a part: `global_shape` equals
   * `shape` unless the manifest splits the value over mesh axes (its
   * "sharding": the rank holds a block) or shards it. `shards` is 1, or N
   * when the rank holds a flat ZeRO shard over dp of its block (row-major,
   * zero-padded to N*c elements with c = ceil(elements / N); dp rank r
   * holds [r*c, (r+1)*c)). docs/runtime.md has the layout. */
  int64_t shards;
  size_t global_rank;
  const int64_t *global_shape;
} tsr_tensor_info_t;

/* Parses `dir`/manifest.json (format version 2; an older version is refused
 * with a message asking to recompile), then dlopens the library it names and
 * looks up the entry symbol of every program. */
TSR_API tsr_status_t tsr_artifact_load(const char *dir,
                                       tsr_artifact_t **out_artifact);

/* Unloads an artifact; null is allowed. */
TSR_API void tsr_artifact_destroy(tsr_artifact_t *artifact);

/* Manifest fields: "mode" and "target" ("" if absent). */
TSR_API const char *tsr_artifact_mode(const tsr_artifact_t *artifact);
TSR_API const char *tsr_artifact_target(const tsr_artifact_t *artifact);

/* The path of the ONNX model named by "onnx" (relative paths resolved
 * against the artifact directory), or "" if absent. */
TSR_API const char *tsr_artifact_onnx(const tsr_artifact_t *artifact);

/* The "train" object of a mode "train" manifest. */
typedef struct tsr_train_info_t {
  /* The first dimension of every data and label input: this rank's share. */
  int64_t batch_size;
  /* batch_size times the data-parallel size: the batch of one step. */
  int64_t global_batch_size;
  /* How many micro-batches the compiled step splits a batch into. */
  int64_t micro_batches;
  /* Label values must lie in [0, num_classes); 0 when absent. */
  int64_t num_classes;
  /* A label equal to ignore_index is exempt from that check. */
  int has_ignore_index;
  int64_t ignore_index;
  /* The inputs fed from a token stream ("tokens"), or -1 for both. */
  int64_t token_input;
  int64_t token_label;
  /* The output with role "loss". */
  size_t loss_output;
} tsr_train_info_t;

/* Fails with TSR_ERROR_INVALID_ARGUMENT unless the mode is "train". */
TSR_API tsr_status_t tsr_artifact_train_info(const tsr_artifact_t *artifact,
                                             tsr_train_info_t *out_info);

/* The device mesh of a per-rank program ("mesh": axis names and sizes in
 * the order compiled code numbers them; none for a single device), its
 * ZeRO stage (0 when absent) and its collectives, each with a description
 * such as "reduce_scatter #31 (bucket 0 on dp: w, b)" ("" out of range). */
TSR_API size_t tsr_artifact_num_mesh_axes(const tsr_artifact_t *artifact);
TSR_API tsr_status_t tsr_artifact_mesh_axis(const tsr_artifact_t *artifact,
                                            size_t index, const char **out_name,
                                            int64_t *out_size);
TSR_API int64_t tsr_artifact_zero_stage(const tsr_artifact_t *artifact);
TSR_API size_t tsr_artifact_num_collectives(const tsr_artifact_t *artifact);
TSR_API const char *
tsr_artifact_collective_description(const tsr_artifact_t *artifact,
                                    size_t index);

/* Profiling (tessera-run --profile and --trace). The CPU target's programs
 * call tsr_profile_begin(id) and tsr_profile_end(id) around every kernel,
 * library call and copy (tsr-cpu-profile-regions); the manifest's
 * "profile_regions" says what each id is. The calls return at once unless
 * tsr_profile_start started a profile, which sums the time and the calls of
 * each region, and with `trace` also records every call, until
 * tsr_profile_stop. Programs run on the thread that invokes them; a profile
 * is the process's, of one thread at a time. Evaluation
 * (tsr_trainer_evaluate) is left out of a profile. */
typedef struct tsr_profile_region_t {
  /* "gemm" (a BLAS matrix product), "call" (another library function: a
   * collective, ...), "kernel" (generated loops) or "copy". */
  const char *kind;
  /* The function called; "" for a copy. */
  const char *callee;
  /* The model node the region comes from ("" if none), and 1 when it
   * computes part of that node's gradient. */
  const char *node;
  int backward;
  /* Since tsr_profile_start: the time spent in the region and its calls. */
  double seconds;
  int64_t calls;
} tsr_profile_region_t;

TSR_API size_t tsr_artifact_num_profile_regions(const tsr_artifact_t *artifact);
TSR_API tsr_status_t tsr_artifact_profile_region(const tsr_artifact_t *artifact,
                                                 size_t index,
                                                 tsr_profile_region_t *out);
TSR_API void tsr_profile_start(int trace);
TSR_API void tsr_profile_stop(void);
/* Writes the recorded calls (tsr_profile_start(1)) of `artifact`'s regions
 * and its program invocations as a Chrome trace (JSON, for chrome://tracing
 * or Perfetto), process id `pid`. */
TSR_API tsr_status_t tsr_profile_write_trace(const tsr_artifact_t *artifact,
                                             const char *path, int pid);
/* Called by compiled programs. */
TSR_API void tsr_profile_begin(int32_t region);
TSR_API void tsr_profile_end(int32_t region);

/* The programs of the artifact ("programs": one entry symbol each) and the
 * number of calls of one step ("schedule"). The inputs and outputs below
 * are the step's: its inputs are the program inputs that no earlier call of
 * the step computes, one per name in order of first use (params, state, the
 * batch, rng); its outputs are every call's outputs in schedule order.
 * tsr_artifact_invoke runs the calls in order. The name is "" out of
 * range. */
TSR_API size_t tsr_artifact_num_programs(const tsr_artifact_t *artifact);
TSR_API const char *tsr_artifact_program_name(const tsr_artifact_t *artifact,
                                              size_t index);
TSR_API size_t tsr_artifact_num_calls(const tsr_artifact_t *artifact);

TSR_API size_t tsr_artifact_num_inputs(const tsr_artifact_t *artifact);
TSR_API size_t tsr_artifact_num_outputs(const tsr_artifact_t *artifact);
TSR_API tsr_status_t tsr_artifact_input_info(const tsr_artifact_t *artifact,
                                             size_t index,
                                             tsr_tensor_info_t *out_info);
TSR_API tsr_status_t tsr_artifact_output_info(const tsr_artifact_t *artifact,
                                              size_t index,
                                              tsr_tensor_info_t *out_info);

/* 1 if step input `index` is read by a program that runs on the host (an
 * optimizer update moved there: its parameters and optimizer state), which
 * keeps it in the host pool and copies it to the device programs that read
 * it; 0 otherwise or for an index out of range. */
TSR_API int tsr_artifact_input_on_host(const tsr_artifact_t *artifact,
                                       size_t index);

/* Where the buffer of input or output `index` must live: the entry's
 * "placement", else where the artifact's target keeps its buffers (host
 * memory for "cpu"). A host tensor cannot stand for a device or pinned one;
 * a pinned host tensor may stand for a host one. */
TSR_API tsr_status_t
tsr_artifact_input_placement(const tsr_artifact_t *artifact, size_t index,
                             tsr_placement_t *out_placement);
TSR_API tsr_status_t
tsr_artifact_output_placement(const tsr_artifact_t *artifact, size_t index,
                              tsr_placement_t *out_placement);

/* Checks `tensor` against input `index`: TSR_ERROR_MISMATCH with a message
 * naming the input and the expected and actual dtype, shape or placement. */
TSR_API tsr_status_t tsr_artifact_check_input(const tsr_artifact_t *artifact,
                                              size_t index,
                                              const tsr_tensor_t *tensor);

/* Creates a zero-filled tensor for output `index`, named after it, in the
 * output's placement. */
TSR_API tsr_status_t tsr_artifact_create_output(const tsr_artifact_t *artifact,
                                                size_t index,
                                                tsr_tensor_t **out_tensor);

/* Checks every input and output of the step against the manifest (dtype,
 * shape and placement), then makes the schedule's calls in order: each
 * program's entry gets args = {its inputs..., its outputs...}, an input
 * being the step input of its name or the output of that name of an earlier
 * call. A program writes an "in_place" output over the input it updates: a
 * caller that passes that input's buffer as the output (as the trainer
 * does) has it updated in place; otherwise the input is first copied into
 * the output, whose buffer the program then runs on, and the input stays
 * as it was. */
TSR_API tsr_status_t tsr_artifact_invoke(const tsr_artifact_t *artifact,
                                         const tsr_tensor_t *const *inputs,
                                         size_t num_inputs,
                                         tsr_tensor_t *const *outputs,
                                         size_t num_outputs);

/*===----------------------------------------------------------------------===*
 * NumPy .npz archives
 *===----------------------------------------------------------------------===*/

/* The arrays of an `.npz` file (a ZIP archive of `NAME.npy` members, stored
 * or deflated, as numpy.savez and numpy.savez_compressed write it). */
typedef struct tsr_npz tsr_npz_t;

/* Reads and checks every member (CRC-32 included). ZIP64 archives, encrypted
 * members and compression methods other than stored and deflate are
 * rejected. */
TSR_API tsr_status_t tsr_npz_read(const char *path, tsr_npz_t **out_npz);

/* Destroys an archive and its arrays; null is allowed. */
TSR_API void tsr_npz_destroy(tsr_npz_t *npz);

TSR_API size_t tsr_npz_num_arrays(const tsr_npz_t *npz);

/* Returns array `index` in archive order, named after its member without the
 * `.npy` suffix, or null if out of range. The archive keeps ownership. */
TSR_API tsr_tensor_t *tsr_npz_array(tsr_npz_t *npz, size_t index);

/*===----------------------------------------------------------------------===*
 * Training data
 *===----------------------------------------------------------------------===*/

/* The samples that feed the data and label inputs of a "train" artifact.
 * Step s (0-based) uses samples (s * G + r * B + i) mod N for i in [0, B),
 * where B is the batch size, G the global batch size, r this process's
 * coordinate on the artifact's dp axis (0 without one; G = B then) and N
 * the number of samples: the dp ranks together take the samples of one
 * batch of G, and ranks that differ only on other axes take the same. Opening
 * fails if the communicator bound to the dp axis (Comm.h) does not have the
 * artifact's dp size. The artifact must outlive the dataset. */
typedef struct tsr_dataset tsr_dataset_t;

/* Reads an `.npz` file holding one array per data and label input, named
 * after it, of the input's dtype and of shape [N, input shape[1:]...], with
 * the same N >= 1 for all. Checks every label against train.num_classes. */
TSR_API tsr_status_t tsr_dataset_open_npz(const tsr_artifact_t *artifact,
                                          const char *path,
                                          tsr_dataset_t **out_dataset);

/* Reads a token stream: a flat file of L little-endian token ids of
 * `token_dtype` (TSR_DTYPE_UINT16 or TSR_DTYPE_UINT32), for an artifact with
 * train.tokens, whose token input has shape [B, T]. The stream is cut into
 * N = (L - 1) / T windows: window w feeds tokens [w*T, w*T + T) to the token
 * input and tokens [w*T + 1, w*T + T + 1) to the token label. Every token is
 * checked against train.num_classes and against the range of the inputs'
 * integer dtypes. */
TSR_API tsr_status_t tsr_dataset_open_tokens(const tsr_artifact_t *artifact,
                                             const char *path,
                                             tsr_dtype_t token_dtype,
                                             tsr_dataset_t **out_dataset);

/* Destroys a dataset; null is allowed. */
TSR_API void tsr_dataset_destroy(tsr_dataset_t *dataset);

/* N: the number of samples, or of windows of a token stream. */
TSR_API int64_t tsr_dataset_num_samples(const tsr_dataset_t *dataset);

/* L: the number of tokens of a token stream, 0 for an `.npz` dataset. */
TSR_API int64_t tsr_dataset_num_tokens(const tsr_dataset_t *dataset);

/* The order batches draw samples in. The samples form an endless stream of
 * epochs, and step s's row i (of the global batch G) is its position
 * p = s * G + i. In order (shuffle 0, the default) that is sample p mod N;
 * shuffled, position p mod N of epoch p / N's permutation of the N samples,
 * a Fisher-Yates shuffle driven by splitmix64 from (seed, epoch): every
 * epoch sees every sample once, and the order depends only on the seed. */
TSR_API void tsr_dataset_set_order(tsr_dataset_t *dataset, int shuffle,
                                   uint64_t seed);

/* Writes the batch of `step` into the data and label tensors among `inputs`
 * (all of the artifact's inputs, in manifest order; those it fills must be
 * host or pinned host tensors); the others are not touched. */
TSR_API tsr_status_t tsr_dataset_fill_batch(const tsr_dataset_t *dataset,
                                            int64_t step,
                                            tsr_tensor_t *const *inputs,
                                            size_t num_inputs);

/*===----------------------------------------------------------------------===*
 * Training
 *===----------------------------------------------------------------------===*/

/* The buffers of a "train" artifact's steps: one tensor per input and per
 * output. The artifact must outlive the trainer. */
typedef struct tsr_trainer tsr_trainer_t;

/* Creates the buffers, in host memory (an artifact that wants any buffer
 * elsewhere is refused): each param input holds the initializer of the
 * same name in the artifact's ONNX model (same dtype and global shape, else
 * an error naming both; a ZeRO-3 input this rank's shard of it), each state
 * input its "init" value. On a mesh, the groups bound to its masks (Comm.h;
 * tsr_mesh_create_for_artifact binds them all) must have the artifact's
 * axis sizes, and the whole mesh needs a communicator; the manifest's
 * collectives are described to the runtime for its error messages. The
 * training state is sharded along the dp axis only: ranks that differ
 * only on other axes hold the same values, and those with coordinate 0 on
 * every other axis save them. */
TSR_API tsr_status_t tsr_trainer_create(const tsr_artifact_t *artifact,
                                        tsr_trainer_t **out_trainer);

/* Destroys a trainer; null is allowed. */
TSR_API void tsr_trainer_destroy(tsr_trainer_t *trainer);

/* The current buffer of input or output `index` (null if out of range). The
 * trainer keeps ownership; the data pointer changes at every step. For an
 * artifact whose buffers live in device memory the trainer keeps the params
 * and optimizer state on the device between steps: tsr_trainer_input first
 * copies their current values to the host tensor it returns (as
 * checkpoints, the ONNX export and the end of tsr_trainer_run do), and an
 * output that updates one of them holds no current value on the host. */
TSR_API tsr_tensor_t *tsr_trainer_input(tsr_trainer_t *trainer, size_t index);
TSR_API tsr_tensor_t *tsr_trainer_output(tsr_trainer_t *trainer, size_t index);

/* Whether tsr_trainer_load_checkpoint accepts a checkpoint whose recorded
 * hyperparameters (the manifest's train.hparams when it was written) differ
 * from this artifact's; by default that fails, naming each difference. */
TSR_API void tsr_trainer_allow_changed_hparams(tsr_trainer_t *trainer,
                                               int allow);

/* Records the run's data order and seed, as set on its dataset with
 * tsr_dataset_set_order: checkpoints save them and loading one written
 * with others fails (the resumed steps would see other batches). The seed
 * also moves the rng input's stream (dropout masks, QSGD's draws) to
 * seed * 2^40 + step * N + rank. Default: in order, seed 0. */
TSR_API void tsr_trainer_set_order(tsr_trainer_t *trainer, int shuffle,
                                   uint64_t seed);

/* Runs one step: fills the batch of `step` from `dataset`, invokes the
 * entry, reads the loss, then swaps the data pointers of every param and
 * state output with those of the input it updates (no copy). Output buffers
 * are not cleared between steps. The loss is returned even if not finite.
 * A sync input (TSR_ROLE_SYNC) is set to 0: with local SGD the ranks'
 * parameters agree after the steps its period divides. */
TSR_API tsr_status_t tsr_trainer_step(tsr_trainer_t *trainer,
                                      const tsr_dataset_t *dataset,
                                      int64_t step, float *out_loss);

/* Fails with a message naming the model if tsr_trainer_save_onnx cannot
 * write it: some initializer uses external data. */
TSR_API tsr_status_t tsr_trainer_check_save_onnx(const tsr_trainer_t *trainer);

/* Fails with a message if tsr_trainer_save_checkpoint and
 * tsr_trainer_load_checkpoint cannot serve the artifact: so far, one whose
 * ranks run different programs (pipeline stages). */
TSR_API tsr_status_t
tsr_trainer_check_checkpoints(const tsr_trainer_t *trainer);

/* Writes the artifact's ONNX model with each param's initializer replaced
 * by the current value (raw_data; name, dims and data_type kept), to
 * `path`.tmp and then renames it to `path`. On a mesh every rank must call
 * it (ZeRO-3 shards are gathered); only world rank 0 writes. */
TSR_API tsr_status_t tsr_trainer_save_onnx(const tsr_trainer_t *trainer,
                                           const char *path);

/* Writes a checkpoint of the whole training state after `step` completed
 * steps: every param and state input (this rank's shards under ZeRO), the
 * step, the RNG state (the step: dropout masks derive from it) and the data
 * position (step * global batch), with a fingerprint of the model and of
 * the params' and states' names and global shapes (Checkpoint.h), and the
 * mesh ("dp=2,tp=2"). On a mesh every rank must call it: each rank with
 * coordinate 0 on every axis but dp writes its dp shard, rank 0 commits the
 * directory atomically once all have. */
TSR_API tsr_status_t tsr_trainer_save_checkpoint(const tsr_trainer_t *trainer,
                                                 const char *dir, int64_t step);

/* Restores the params and state from a checkpoint written by any mesh and
 * ZeRO stage of the same model and optimizer, and returns the number of
 * completed steps. Refused (TSR_ERROR_MISMATCH, TSR_ERROR_PARSE or
 * TSR_ERROR_IO, the trainer unchanged) when a file is missing, truncated or
 * corrupt, the fingerprint differs, a tensor is missing, extra or of
 * another shape, or the global batch size differs. Collective on a mesh:
 * if any rank fails, all do. */
TSR_API tsr_status_t tsr_trainer_load_checkpoint(tsr_trainer_t *trainer,
                                                 const char *dir,
                                                 int64_t *out_step);

/* The bytes this rank holds in param inputs and in state inputs (shards
 * under ZeRO 3 and ZeRO >= 1 respectively). */
TSR_API tsr_status_t tsr_trainer_state_bytes(const tsr_trainer_t *trainer,
                                             size_t *out_params,
                                             size_t *out_state);

/* One completed step, as tsr_trainer_run reports it. */
typedef struct tsr_step_record_t {
  /* The step, counted from 1, and the step training stops after. */
  int64_t step;
  int64_t steps;
  /* The loss of the step (the mean over the dp ranks); may be nan or inf. */
  float loss;
  /* The wall time of tsr_trainer_step, and the items of one global batch
   * processed per second of it (0 when no time was measured). */
  double seconds;
  double items_per_second;
  /* What an item is: "tokens" for an artifact with train.tokens (a batch of
   * B windows of T tokens is B * T of them), else "samples". */
  const char *unit;
  /* With dynamic loss scaling (a float32 state "loss_scale" that the step
   * updates): the scale after the step, and 1 if the step found a gradient
   * overflow, skipped the update and lowered the scale. 0 and 0 without. */
  double loss_scale;
  int skipped;
  /* Minor page faults of the process during the step (getrusage): memory
   * the step touched for the first time. The first step faults its buffers
   * in; later steps take them from the arena planned after the first
   * (tsr_memory_arena_stats), so they should take few. */
  int64_t page_faults;
} tsr_step_record_t;

/* What tsr_trainer_run did besides steps: wrote the ONNX model or a
 * checkpoint. */
typedef enum tsr_train_write_t {
  TSR_TRAIN_WROTE_ONNX = 0,
  TSR_TRAIN_WROTE_CHECKPOINT = 1,
} tsr_train_write_t;

/* One evaluation during tsr_trainer_run (eval_dataset): after step `step`,
 * the mean loss of the artifact's "eval" program over `batches` global
 * batches of the evaluation data (`samples` samples, windows for a token
 * stream, some of the last batch repeated), which took `seconds`. */
typedef struct tsr_eval_record_t {
  int64_t step;
  double loss;
  int64_t batches;
  int64_t samples;
  double seconds;
} tsr_eval_record_t;

/* The training loop of tsr_trainer_run. Zero-initialize it and set what is
 * needed; only `steps` is required. */
typedef struct tsr_train_options_t {
  /* Train until `steps` steps have completed, starting after `first_step`
   * completed ones (0, or the step tsr_trainer_load_checkpoint returned);
   * 0 <= first_step <= steps. */
  int64_t steps;
  int64_t first_step;
  /* Non-null: write the trained ONNX model there after the last step, and
   * with save_every K > 0 also to PATH.step<k>.onnx (PATH without its
   * ".onnx" suffix) after every step k that is a multiple of K. */
  const char *save_onnx;
  int64_t save_every;
  /* Non-null: write a checkpoint DIR/step-<k> (k in 8 digits) after every
   * step k that is a multiple of checkpoint_every (when > 0), and after
   * the last step unless that one just was. */
  const char *checkpoint_dir;
  int64_t checkpoint_every;
  /* Called, when non-null, after every step (before that step's writes),
   * and after every file or checkpoint written, with `user`. The record
   * and the path are valid during the call only. */
  void (*on_step)(void *user, const tsr_step_record_t *record);
  void (*on_write)(void *user, tsr_train_write_t what, const char *path);
  void *user;
  /* Non-null: evaluate (tsr_trainer_evaluate) on it after every step that
   * is a multiple of eval_every (when > 0) and after the last step, over
   * eval_batches batches (0: every sample once), and report each to
   * on_eval. */
  const tsr_dataset_t *eval_dataset;
  int64_t eval_every;
  int64_t eval_batches;
  void (*on_eval)(void *user, const tsr_eval_record_t *record);
} tsr_train_options_t;

/* Runs the training loop: for step k = first_step + 1 ... steps, runs
 * tsr_trainer_step on the batch of step k - 1 of `dataset`, reports it to
 * on_step, stops with TSR_ERROR_NOT_FINITE ("step k: the loss is nan;
 * training stopped") when its loss is not finite, then writes the ONNX model
 * and the checkpoint that are due. Then writes the final checkpoint and
 * model. A failing step fails with its error prefixed by "step k: "; a
 * failing write with the write's error. On a mesh every rank calls it
 * with the same options (steps, saves and checkpoints are collective); the
 * callbacks run on every rank. */
TSR_API tsr_status_t tsr_trainer_run(tsr_trainer_t *trainer,
                                     const tsr_dataset_t *dataset,
                                     const tsr_train_options_t *options);

/* The mean loss of the artifact's evaluation program ("eval", made by
 * tessera-compile --eval) with the trainer's parameters over batches 0 ...
 * batches - 1 of `dataset` in order (batches 0: ceil(samples / global
 * batch), every sample once), each rank on its part of every batch and the
 * mean taken over the dp ranks (collective on a mesh). The batch inputs of
 * the trainer are overwritten; the parameters and state are not touched.
 * TSR_ERROR_UNSUPPORTED without an evaluation program. */
TSR_API tsr_status_t tsr_trainer_evaluate(tsr_trainer_t *trainer,
                                          const tsr_dataset_t *dataset,
                                          int64_t batches,
                                          tsr_eval_record_t *out_record);

/* With a parameter-server artifact (manifest "parameter_server"): the
 * server this process is (by the launcher's world rank), or -1 on a worker
 * and for other artifacts. A worker trains with tsr_trainer_run; its
 * pushes and pulls go over the world communicator that
 * tsr_mesh_create_for_artifact binds. */
TSR_API int64_t tsr_trainer_parameter_server(const tsr_trainer_t *trainer);

/* What a parameter server did (tsr_trainer_serve): the steps every worker
 * ran, the updates it applied (steps in "sync" mode, steps * workers in
 * "async"), how often a worker that pushed had to wait for the slowest,
 * and the largest lead over the slowest a worker started a step with
 * (never above `staleness`; -1 in "sync" mode). */
typedef struct tsr_server_stats_t {
  int64_t server, workers, staleness;
  int64_t steps, updates, waits, max_lead;
} tsr_server_stats_t;

/* Runs a parameter server until every worker has run its steps (worker 0
 * says how many), then sends worker 0 the final parameters. Fills
 * `out_stats` also on failure (what was done so far). */
TSR_API tsr_status_t tsr_trainer_serve(tsr_trainer_t *trainer,
                                       tsr_server_stats_t *out_stats);

/*===----------------------------------------------------------------------===*
 * Memory accounting
 *===----------------------------------------------------------------------===*/

/* The allocation functions that MLIR's
 * finalize-memref-to-llvm{use-generic-functions=true} calls, for compiled
 * code to resolve against this library (which must be loaded with global
 * symbol visibility: a dependency of the executable, or ctypes.RTLD_GLOBAL).
 * Each block has a header holding the requested size, and comes from
 * malloc, or, inside tsr_artifact_invoke after a program's first call, from
 * the arena planned from that call; `alignment` must be a power of two.
 * Thread-safe. */
TSR_API void *_mlir_memref_to_llvm_alloc(size_t size);
TSR_API void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
TSR_API void _mlir_memref_to_llvm_free(void *ptr);

/* An unranked memref as MLIR's LLVM lowering passes it: the rank and a
 * ranked descriptor {allocated, aligned, offset, sizes[rank],
 * strides[rank]} (pointers, then int64_t). */
typedef struct {
  int64_t rank;
  void *descriptor;
} tsr_unranked_memref_t;

/* The copy MLIR lowers a memref.copy between non-contiguous layouts to
 * (element by element of `element_size` bytes, any strides; src and dst of
 * one shape): the same contract as libmlir_c_runner_utils' memrefCopy, so
 * compiled code needs only this library, not the LLVM install. */
TSR_API void memrefCopy(int64_t element_size, tsr_unranked_memref_t *src,
                        tsr_unranked_memref_t *dst);

/* Bytes requested through the functions above and not yet freed, and the
 * most that ever were at once since the last reset. Either pointer may be
 * null. */
TSR_API void tsr_memory_stats(size_t *out_current, size_t *out_peak);

/* The bytes of the arena that serves compiled code's blocks in every call
 * after a program's first (planned from that call's allocations; 0 until a
 * call was planned). Its pages are resident for the process's life; the
 * bytes the arena serves are counted in tsr_memory_stats as requested. */
TSR_API void tsr_memory_arena_stats(size_t *out_bytes);

/* The same for the buffers of the runtime's own tensors (tsr_tensor_t,
 * counted by byte size). */
TSR_API void tsr_tensor_memory_stats(size_t *out_current, size_t *out_peak);

/* The bytes of compiled code's blocks that hold reduced gradients: the
 * results of the gradient collectives (all-reduce, or reduce-scatter under
 * ZeRO 2 and 3), counted from the collective until freed, and their peak. */
TSR_API void tsr_memory_gradient_stats(size_t *out_current, size_t *out_peak);

/* Sets the peaks (compiled code's, tensors' and gradients') to the current
 * values. */
TSR_API void tsr_memory_reset_peak(void);

/* Makes compiled code's blocks and the runtime's tensors together a
 * capacity-limited "device pool" of `bytes` (0, the default: unlimited): an
 * allocation of compiled code that would take them over it ends the process
 * with one line naming the capacity, the bytes in use and the request
 * (compiled code cannot take a failed allocation). */
TSR_API tsr_status_t tsr_memory_set_device_capacity(size_t bytes);

/*===----------------------------------------------------------------------===*
 * Activation offload: the host pool, the transfer thread and stream
 * (Offload.cpp)
 *===----------------------------------------------------------------------===*/

/* Called from compiled code (tsr-offload's transfers, numbered by the
 * compiler). From CPU code (`stream` null): tsrt_offload_start starts
 * copying `bytes` bytes at `device` into a new block of the host pool held
 * under `transfer` and returns at once; tsrt_offload_wait blocks until that
 * copy has completed (the device buffer may then be freed);
 * tsrt_prefetch_start starts copying the block back into `device` (the
 * same byte count); tsrt_prefetch_wait blocks until that copy has
 * completed (the block is kept for the next step's copy of the same
 * transfer). Each wait names the device buffer of the copy it waits for
 * (checked). The copies run on one transfer thread in the order they
 * start.
 *
 * From CUDA code `stream` is its compute stream (the one its kernels run
 * on) and `device` device memory; the host neither touches it nor waits.
 * The block is pinned host memory (tsr_host_alloc_pinned, counted in the
 * host pool). Each start queues its copy on the runtime's transfer stream
 * after the work queued on `stream` so far (the offloaded value's
 * producer; the prefetched buffer's earlier users), and each wait makes
 * the work queued on `stream` after it wait for that copy: after
 * tsrt_offload_wait that work may overwrite or free the device buffer,
 * after tsrt_prefetch_wait it may read the prefetched one. The transfer
 * stream runs the copies in the order they start. All four calls of one
 * transfer take a stream, or none does.
 *
 * Misuse (a wait with no copy in flight, a transfer started twice, another
 * byte count, a wait on another buffer, a stream on some calls of a
 * transfer only) and a failed host allocation or CUDA call print
 * "tessera-run: rank R: transfer N: ..." and exit 1. */
TSR_API void tsrt_offload_start(int64_t transfer, const void *device,
                                int64_t bytes, void *stream);
TSR_API void tsrt_offload_wait(int64_t transfer, const void *device,
                               void *stream);
TSR_API void tsrt_prefetch_start(int64_t transfer, void *device, int64_t bytes,
                                 void *stream);
TSR_API void tsrt_prefetch_wait(int64_t transfer, void *device, void *stream);

/* Makes each copy last at least bytes / bytes_per_second (the transfer
 * thread sleeps out the rest after the memcpy): a host link's speed on a
 * machine whose "device" memory is host memory. 0 (the default): as fast
 * as memcpy. Copies on a stream (CUDA code) run at the link's own speed:
 * the rate does not apply to them. Fails with TSR_ERROR_INVALID_ARGUMENT
 * for a negative rate. */
TSR_API tsr_status_t tsr_set_host_bandwidth(double bytes_per_second);

typedef struct tsr_transfer_stats {
  /* Values offloaded, and the bytes copied each way (on both paths). */
  uint64_t transfers;
  uint64_t bytes_to_host;
  uint64_t bytes_to_device;
  /* The transfer thread's time copying (the emulated link's included), and
   * compiled code's time blocked in the two waits: the difference is the
   * copy time that compute hid. Copies on a stream add nothing to either:
   * the host neither copies nor waits for them (the device's own profile
   * has their time). */
  double busy_seconds;
  double waited_seconds;
} tsr_transfer_stats_t;

/* The transfers since the last reset. */
TSR_API void tsr_transfer_stats(tsr_transfer_stats_t *out);
/* The copies around host programs since the last reset (an artifact whose
 * optimizer update runs on the host): `transfers` counts tensors, the bytes
 * are the gradients copied to the host and the parameters copied back, and
 * every second of them is waited for (nothing overlaps them yet). */
TSR_API void tsr_host_program_stats(tsr_transfer_stats_t *out);
/* Resets both. */
TSR_API void tsr_transfer_reset_stats(void);

/* Bytes of the host pool (the blocks of offloaded values, pinned ones
 * included, kept from step to step, and what host programs hold and
 * allocate) now, and the most at once since the last reset. Either pointer
 * may be null. */
TSR_API void tsr_host_pool_stats(size_t *out_current, size_t *out_peak);
TSR_API void tsr_host_pool_reset_peak(void);

/*===----------------------------------------------------------------------===*
 * Library calls from compiled code
 *===----------------------------------------------------------------------===*/

/* C (f32, row-major, M x N, row stride ldc) = A (f32, M x K, lda) times
 * B (f32, K x N, ldb), plus beta times C, through oneDNN's sgemm (what
 * tsr-linalg-to-blas calls by default; OpenBLAS's cblas_sgemm with
 * --cpu-gemm=openblas). A failure makes the tsr_artifact_invoke that ran the
 * code fail with oneDNN's status. */
TSR_API void tsr_gemm_f32(int64_t m, int64_t n, int64_t k, const float *a,
                          int64_t lda, const float *b, int64_t ldb, float *c,
                          int64_t ldc, float beta);

/* The threads oneDNN's GEMMs (f32, bf16, f16) use in this thread's later
 * calls (OpenMP's omp_set_num_threads); 0 or less changes nothing. OpenBLAS,
 * for artifacts compiled with --cpu-gemm=openblas, reads
 * OPENBLAS_NUM_THREADS when the artifact's library loads it. */
TSR_API void tsr_set_num_threads(int threads);

/* C (f32, row-major, M x N, row stride ldc) = A (bf16, M x K, lda) times
 * B (bf16, K x N, ldb), plus beta times C, through oneDNN's matmul (Debian's
 * OpenBLAS has no bf16 GEMM). Products accumulate in f32. A failure makes
 * the tsr_artifact_invoke that ran the code fail with oneDNN's message. */
TSR_API void tsr_gemm_bf16(int64_t m, int64_t n, int64_t k, const void *a,
                           int64_t lda, const void *b, int64_t ldb, float *c,
                           int64_t ldc, float beta);

/* The same with f16 operands: widened to f32 (exactly) and multiplied by
 * oneDNN's sgemm, since no CPU library here multiplies f16 directly. */
TSR_API void tsr_gemm_f16(int64_t m, int64_t n, int64_t k, const void *a,
                          int64_t lda, const void *b, int64_t ldb, float *c,
                          int64_t ldc, float beta);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_RUNTIME_H */
