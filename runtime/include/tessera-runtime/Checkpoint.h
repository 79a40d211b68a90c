/*===- tessera-runtime/Checkpoint.h - Sharded training checkpoints -------===*\
|*                                                                            *|
|* Durable, checksummed checkpoints of a whole training state (parameters,    *|
|* optimizer state, step, RNG and data position), written collectively by the *|
|* ranks of a data-parallel run and readable under another number of ranks.   *|
|* docs/checkpoints.md describes the on-disk format and its guarantees.       *|
|*                                                                            *|
|* Sharding. Every tensor has a global shape, a dtype and a shard count S.    *|
|* S = 1: replicated, every rank holds the whole tensor. S = N > 1: flat      *|
|* (ZeRO-style) sharding over N ranks: the tensor is flattened row-major and  *|
|* zero-padded to N * c elements, c = ceil(numel / N), and rank r holds the   *|
|* 1-D slice [r * c, (r + 1) * c). tsr_checkpoint_read_tensor converts        *|
|* between any two such layouts.                                              *|
|*                                                                            *|
|* Saving. Every rank calls tsr_checkpoint_write_shard(dir, ...), which       *|
|* writes its file into `dir`.tmp/; after a barrier, rank 0 calls             *|
|* tsr_checkpoint_commit(dir, ...), which checks every file, writes the       *|
|* manifest and renames `dir`.tmp to `dir` atomically. The ranks must share   *|
|* one filesystem (rank 0 reads every rank's file). Files are fsynced before  *|
|* being renamed, so that after a crash `dir` is either the previous complete *|
|* checkpoint or the new complete one.                                        *|
|*                                                                            *|
|* Errors follow Runtime.h: a tsr_status_t, results through `out_`            *|
|* parameters on success only, and tsr_last_error() naming the file or tensor *|
|* involved.                                                                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TESSERA_RUNTIME_CHECKPOINT_H
#define TESSERA_RUNTIME_CHECKPOINT_H

#include "tessera-runtime/Runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The state of a run besides its tensors. */
typedef struct tsr_checkpoint_meta_t {
  /* The number of completed steps. */
  int64_t step;
  /* The RNG state (for the trainer, the seed of the next step's stream). */
  int64_t rng;
  /* The index of the next training sample. */
  int64_t data_position;
  /* An opaque string derived from the model and training configuration
   * (e.g. a hash), compared by tsr_checkpoint_check_fingerprint. Null is
   * written as "". */
  const char *fingerprint;
  /* The number of ranks that wrote the checkpoint. */
  int64_t world_size;
  /* Free-form description of the device mesh, e.g. "dp=4"; null is "". */
  const char *mesh;
  /* The ZeRO stage of the run that wrote the checkpoint. */
  int zero_stage;
  /* The data order and seed of the run (tsr_trainer_set_order): 1 if its
   * batches drew samples shuffled, and the seed of the shuffle and of the
   * dropout stream. Absent in a checkpoint written before they existed:
   * read as 0 and 0. */
  int shuffle;
  uint64_t seed;
  /* The run's hyperparameters as a JSON object of strings (the artifact
   * manifest's train.hparams), compared when a trainer resumes; null or
   * "" for none. */
  const char *hparams;
} tsr_checkpoint_meta_t;

/* A tensor of the training state, with its global shape and shard count
 * (1: replicated; N > 1: flat over N ranks, see above). */
typedef struct tsr_checkpoint_tensor_t {
  const char *name;
  tsr_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  int64_t shards;
} tsr_checkpoint_tensor_t;

/* The number of elements one rank holds of a tensor of `num_elements`
 * elements split into `shards`: num_elements when shards is 1, else
 * ceil(num_elements / shards). Returns -1 if an argument is negative or
 * shards is 0. */
TSR_API int64_t tsr_checkpoint_local_elements(int64_t num_elements,
                                              int64_t shards);

/*===----------------------------------------------------------------------===*
 * Writing
 *===----------------------------------------------------------------------===*/

/* Writes the file of `rank` (in [0, world_size)) into `dir`.tmp/ (created
 * with its parents if needed), as shard-RRRRR-of-WWWWW.bin: written under a
 * temporary name, fsynced, renamed, and the directory fsynced.
 *
 * `data[i]` holds this rank's local elements of tensors[i], row-major:
 * the whole tensor when tensors[i].shards is 1, else the slice of
 * tsr_checkpoint_local_elements elements (the padding included, whatever
 * its values). Every shard count must be 1 or world_size, the names must be
 * unique and non-empty, and meta->world_size must equal world_size. Only
 * rank 0 writes replicated tensors; the other ranks skip them (their data
 * pointers are not read and may be null). Every rank must pass the same
 * tensors in the same order and the same meta. */
TSR_API tsr_status_t tsr_checkpoint_write_shard(
    const char *dir, int64_t rank, int64_t world_size,
    const tsr_checkpoint_meta_t *meta, size_t num_tensors,
    const tsr_checkpoint_tensor_t *tensors, const void *const *data);

/* Called by rank 0 once every rank's tsr_checkpoint_write_shard returned
 * TSR_OK. Checks that all world_size files exist in `dir`.tmp/ with the size
 * and CRC-32 they record, agree on the tensors and match `meta`; removes
 * anything else from `dir`.tmp/; writes `dir`.tmp/manifest.json; fsyncs it
 * and the directory; then renames `dir`.tmp to `dir`. An existing `dir` is
 * swapped out atomically and removed (where the filesystem cannot swap, it
 * is renamed to `dir`.old first, and removed once the new `dir` is in
 * place). */
TSR_API tsr_status_t tsr_checkpoint_commit(const char *dir, int64_t world_size,
                                           const tsr_checkpoint_meta_t *meta);

/*===----------------------------------------------------------------------===*
 * Reading
 *===----------------------------------------------------------------------===*/

/* An opened checkpoint: its parsed manifest. */
typedef struct tsr_checkpoint tsr_checkpoint_t;

/* Parses `dir`/manifest.json and checks every file it names: present, of
 * the recorded size and CRC-32, and with a header agreeing with the
 * manifest. Fails with TSR_ERROR_IO (missing or unreadable file) or
 * TSR_ERROR_PARSE (bad manifest, truncated or corrupt file, other byte
 * order), the message naming the file and what is wrong. Reads every byte
 * of the checkpoint. */
TSR_API tsr_status_t tsr_checkpoint_open(const char *dir,
                                         tsr_checkpoint_t **out_checkpoint);

/* Closes a checkpoint; null is allowed. */
TSR_API void tsr_checkpoint_close(tsr_checkpoint_t *checkpoint);

/* The meta of the run that wrote the checkpoint. The strings stay valid
 * until the checkpoint is closed. */
TSR_API tsr_status_t tsr_checkpoint_meta(const tsr_checkpoint_t *checkpoint,
                                         tsr_checkpoint_meta_t *out_meta);

/* Fails with TSR_ERROR_MISMATCH, naming both fingerprints, unless the
 * checkpoint's fingerprint equals `fingerprint` (null is ""). A caller
 * resuming a run calls this unless the user asked to ignore the check. */
TSR_API tsr_status_t tsr_checkpoint_check_fingerprint(
    const tsr_checkpoint_t *checkpoint, const char *fingerprint);

/* The saved tensors, in the order rank 0 wrote them. */
TSR_API size_t tsr_checkpoint_num_tensors(const tsr_checkpoint_t *checkpoint);

/* The name of tensor `index`, or null if out of range. */
TSR_API const char *
tsr_checkpoint_tensor_name(const tsr_checkpoint_t *checkpoint, size_t index);

/* The name, dtype, global shape and saved shard count of tensor `index`.
 * The pointers stay valid until the checkpoint is closed. */
TSR_API tsr_status_t
tsr_checkpoint_tensor_info(const tsr_checkpoint_t *checkpoint, size_t index,
                           tsr_checkpoint_tensor_t *out_info);

/* Fills `out_buffer` (`out_bytes` bytes: exactly
 * tsr_checkpoint_local_elements(numel, shards) elements of `dtype`) with the
 * local tensor of `my_rank` under the layout given by `shards`, whatever
 * layout the checkpoint was written with: the whole tensor when shards is
 * 1, else the flat slice of rank `my_rank` (in [0, shards)), with its
 * padding zeroed. Fails with TSR_ERROR_MISMATCH, naming the tensor, when the
 * checkpoint has no tensor `name` or its dtype or global shape differ.
 * Reads only the bytes of the slice (tsr_checkpoint_open checked them). */
TSR_API tsr_status_t tsr_checkpoint_read_tensor(
    const tsr_checkpoint_t *checkpoint, const char *name, tsr_dtype_t dtype,
    size_t rank, const int64_t *shape, int64_t shards, int64_t my_rank,
    void *out_buffer, size_t out_bytes);

/* Writes into `out_path` (a buffer of `cap` bytes) the path `root`/step-N of
 * the complete checkpoint with the largest N under `root`: a directory
 * named "step-" and decimal digits, holding manifest.json (leftovers such as
 * `step-N.tmp` are ignored). Writes "" when there is none, also when `root`
 * does not exist. Fails with TSR_ERROR_INVALID_ARGUMENT if the path does not
 * fit. The checkpoint is not verified: tsr_checkpoint_open does that. */
TSR_API tsr_status_t tsr_checkpoint_latest(const char *root, char *out_path,
                                           size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_CHECKPOINT_H */
