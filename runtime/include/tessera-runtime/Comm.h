/*===- tessera-runtime/Comm.h - Communicators and devices -----------------===*\
|*                                                                            *|
|* Communicators with one interface and two backends: MPI (CPU buffers; the  *|
|* process launcher is mpirun or srun) and NCCL (GPU buffers, in a plugin    *|
|* that is loaded on demand so that tessera-run starts on machines without   *|
|* CUDA). Devices, device and pinned host memory, streams and events for the *|
|* GPU side, loaded the same way. And the entry points that compiled code    *|
|* calls for the collectives of a per-rank program.                          *|
|*                                                                            *|
|* Status conventions are those of Runtime.h.                                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef TESSERA_RUNTIME_COMM_H
#define TESSERA_RUNTIME_COMM_H

#include "tessera-runtime/Runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Communicators
 *===----------------------------------------------------------------------===*/

typedef enum tsr_comm_backend_t {
  TSR_COMM_MPI = 1,
  TSR_COMM_NCCL = 2,
} tsr_comm_backend_t;

typedef enum tsr_reduce_op_t {
  TSR_REDUCE_SUM = 0,
  /* The sum divided by the communicator's size. */
  TSR_REDUCE_MEAN = 1,
  TSR_REDUCE_MAX = 2,
  TSR_REDUCE_MIN = 3,
} tsr_reduce_op_t;

typedef struct tsr_comm tsr_comm_t;

typedef struct tsr_comm_options_t {
  /* A collective that has not completed after this many seconds ends the
   * process with a message naming the collective and the ranks that never
   * arrived at it. 0 disables the watchdog. */
  double timeout_seconds;
  /* NCCL: the CUDA device of this rank; -1 means LOCAL_RANK (or 0). */
  int device;
} tsr_comm_options_t;

/* The world communicator. MPI: initializes MPI if needed (ranks from mpirun
 * or srun). NCCL: rank and size from MPI when launched by mpirun/srun, else
 * from RANK, WORLD_SIZE and MASTER_ADDR:MASTER_PORT (torchrun's and Slurm's
 * conventions); the unique id travels over the same channel.
 *
 * MPI is initialized with MPI_THREAD_MULTIPLE (the watchdog thread makes MPI
 * calls while the caller waits in a collective). A null `options` means
 * {timeout_seconds = 0, device = -1}. The first world communicator installs
 * a SIGTERM handler (unless the process already has one) that prints the
 * collective this rank was in, then exits with status 143. */
TSR_API tsr_status_t tsr_comm_init(tsr_comm_backend_t backend,
                                   const tsr_comm_options_t *options,
                                   tsr_comm_t **out_comm);

/* A sub-communicator of the ranks with the same `color`, ordered by `key`.
 * Collective over `parent`. tsr_mesh_create makes those of a device mesh. */
TSR_API tsr_status_t tsr_comm_split(tsr_comm_t *parent, int color, int key,
                                    tsr_comm_t **out_comm);

/* Destroys a communicator; null is allowed. The world communicator is
 * destroyed last (MPI_Finalize runs then). */
TSR_API void tsr_comm_destroy(tsr_comm_t *comm);

TSR_API int tsr_comm_rank(const tsr_comm_t *comm);
TSR_API int tsr_comm_size(const tsr_comm_t *comm);
TSR_API tsr_comm_backend_t tsr_comm_backend(const tsr_comm_t *comm);

/* Names the collective this rank issues next on `comm` (copied), e.g.
 * "all_reduce #3 at step 7 (bucket 1: fc1.weight, fc1.bias)". The watchdog's
 * and the signal handlers' messages quote it. */
TSR_API void tsr_comm_set_label(tsr_comm_t *comm, const char *label);

/* Lets the next collective, send or receive on `comm` wait `timeouts`
 * (> 0) times the communicator's timeout before the watchdog ends the job.
 * A rank whose peer itself waits on a third rank waits longer, so that the
 * peer, which knows whom it waits for, reports first. */
TSR_API void tsr_comm_set_patience(tsr_comm_t *comm, double timeouts);

/* Collectives. Buffers are host memory for MPI and device memory for NCCL;
 * `stream` is a CUDA stream for NCCL and ignored (null) for MPI. Counts are
 * elements. `send` may equal `recv` (in place) for all-reduce and
 * broadcast. */
TSR_API tsr_status_t tsr_comm_all_reduce(tsr_comm_t *comm, const void *send,
                                         void *recv, size_t count,
                                         tsr_dtype_t dtype, tsr_reduce_op_t op,
                                         void *stream);
/* `send` holds size * recv_count elements; rank r receives block r reduced. */
TSR_API tsr_status_t tsr_comm_reduce_scatter(tsr_comm_t *comm, const void *send,
                                             void *recv, size_t recv_count,
                                             tsr_dtype_t dtype,
                                             tsr_reduce_op_t op, void *stream);
/* `recv` receives size * send_count elements, block r from rank r. */
TSR_API tsr_status_t tsr_comm_all_gather(tsr_comm_t *comm, const void *send,
                                         void *recv, size_t send_count,
                                         tsr_dtype_t dtype, void *stream);
/* Block p of `send` (count elements) goes to rank p; block p of `recv` comes
 * from rank p. */
TSR_API tsr_status_t tsr_comm_all_to_all(tsr_comm_t *comm, const void *send,
                                         void *recv, size_t count,
                                         tsr_dtype_t dtype, void *stream);
TSR_API tsr_status_t tsr_comm_broadcast(tsr_comm_t *comm, void *buffer,
                                        size_t count, tsr_dtype_t dtype,
                                        int root, void *stream);
/* A send does not wait for its receive (MPI sends a copy in the background;
 * NCCL enqueues it on the stream); messages from one rank to another arrive
 * in the order they were sent. */
TSR_API tsr_status_t tsr_comm_send(tsr_comm_t *comm, const void *buffer,
                                   size_t count, tsr_dtype_t dtype, int peer,
                                   void *stream);
TSR_API tsr_status_t tsr_comm_recv(tsr_comm_t *comm, void *buffer, size_t count,
                                   tsr_dtype_t dtype, int peer, void *stream);
/* Receives a message from whichever rank sends one first and sets *out_peer
 * to its rank (MPI only). */
TSR_API tsr_status_t tsr_comm_recv_any(tsr_comm_t *comm, void *buffer,
                                       size_t count, tsr_dtype_t dtype,
                                       int *out_peer);
TSR_API tsr_status_t tsr_comm_barrier(tsr_comm_t *comm);

/*===----------------------------------------------------------------------===*
 * Calls from compiled code
 *===----------------------------------------------------------------------===*/

/* A per-rank program names the group of ranks a collective runs on by a bit
 * mask of mesh axes (bit i for axis i of the manifest's "mesh" list: 1 is
 * the group along axis 0, 3 the group along axes 0 and 1), and each
 * collective by its index in "collectives". The launcher binds a
 * communicator to every group before the first step (tsr_mesh_create does);
 * without a communicator or a mesh, a group has size 1 (collectives copy).
 * The `axis` arguments below are such masks.
 * Compiled code cannot handle a status: a failing collective prints
 * tsr_last_error() with the collective's description and exits the process with
 * status 1. */
TSR_API tsr_status_t tsr_comm_bind_axis(int64_t axis, tsr_comm_t *comm);
TSR_API tsr_status_t tsr_comm_describe_collective(int64_t id,
                                                  const char *description);

/* The training step that tsrt_* labels mention ("... at step 7"); negative
 * (the initial value) leaves the step out. */
TSR_API void tsr_comm_set_step(int64_t step);

TSR_API int64_t tsrt_axis_rank(int64_t axis);
TSR_API int64_t tsrt_axis_size(int64_t axis);
/* dtype is a tsr_dtype_t, op a tsr_reduce_op_t. `stream` says how the
 * collective is ordered. Code compiled for the CPU passes NULL: buffers are
 * host memory, and the collective is done when the call returns. Code
 * compiled for a GPU passes its compute stream (mgpuStreamCreate's):
 * buffers are device memory, and the host never waits for the device. The
 * collective is enqueued on the runtime's communication stream after the
 * work queued on `stream` before the call, and the work queued on `stream`
 * after the call waits for it (ordered by events); a group of one rank
 * copies on `stream` itself. tsrt_wait's `stream` is the one that waits for
 * the collective (NULL on the CPU). */
TSR_API void tsrt_all_reduce(int64_t id, int64_t axis, const void *send,
                             void *recv, int64_t count, int64_t dtype,
                             int64_t op, void *stream);
TSR_API void tsrt_reduce_scatter(int64_t id, int64_t axis, const void *send,
                                 void *recv, int64_t recv_count, int64_t dtype,
                                 int64_t op, void *stream);
TSR_API void tsrt_all_gather(int64_t id, int64_t axis, const void *send,
                             void *recv, int64_t send_count, int64_t dtype,
                             void *stream);
/* Asynchronous forms: the caller may reuse or free `send` as soon as they
 * return, and must leave `recv` untouched until tsrt_wait(recv, stream).
 * On the CPU the send data is copied before they return, and the
 * collective runs on the runtime's communication thread after every
 * collective issued before it, while the caller goes on; tsrt_wait blocks
 * until the one writing `recv` is done (and exits, like the blocking forms,
 * if it failed). On a GPU the send data is copied on `stream` into a
 * staging block of device memory (unless `send` is `recv`), and the
 * collective, reading that block, is enqueued on the communication stream
 * after the copy, in issue order with every other collective; tsrt_wait
 * makes the work queued on `stream` after it wait for the collective. The
 * host never blocks, and what `stream` runs between the start and the wait
 * overlaps the collective. */
TSR_API void tsrt_all_reduce_start(int64_t id, int64_t axis, const void *send,
                                   void *recv, int64_t count, int64_t dtype,
                                   int64_t op, void *stream);
TSR_API void tsrt_reduce_scatter_start(int64_t id, int64_t axis,
                                       const void *send, void *recv,
                                       int64_t recv_count, int64_t dtype,
                                       int64_t op, void *stream);
TSR_API void tsrt_all_gather_start(int64_t id, int64_t axis, const void *send,
                                   void *recv, int64_t send_count,
                                   int64_t dtype, void *stream);
TSR_API void tsrt_wait(void *recv, void *stream);
/* `count` is the whole operand: count / size elements go to each rank. */
TSR_API void tsrt_all_to_all(int64_t id, int64_t axis, const void *send,
                             void *recv, int64_t count, int64_t dtype,
                             void *stream);
/* Sends `send_count` elements of `send` to rank `send_to` and then
 * receives `recv_count` elements into `recv` from rank `recv_from` (-1: no
 * message that way). The send does not wait for its receive. */
TSR_API void tsrt_permute(int64_t id, int64_t axis, const void *send,
                          void *recv, int64_t send_count, int64_t dtype,
                          int64_t recv_count, int64_t send_to,
                          int64_t recv_from, void *stream);
/* Every rank's `recv` gets rank `root`'s `send`. */
TSR_API void tsrt_broadcast(int64_t id, int64_t axis, const void *send,
                            void *recv, int64_t count, int64_t dtype,
                            int64_t root, void *stream);

/*===----------------------------------------------------------------------===*
 * Device meshes
 *===----------------------------------------------------------------------===*/

/* The ranks of a world communicator laid out as a device mesh: named axes in
 * a stated order whose sizes multiply to the world's size. Ranks are laid
 * out row-major over the axes as listed, the last axis innermost (the
 * layout of the compiler's #tsr.mesh): the rank at coordinates
 * (c0, ..., cK-1) is sum_i c_i * prod_{j > i} size_j. A group, named by a bit
 * mask of axes like the tsrt_* entry points name it, is the set of ranks
 * that differ only in those axes, numbered row-major over them in mesh
 * order. With axes dp=2, tp=2: the tp groups (mask 2) are world ranks
 * {0, 1} and {2, 3}, the dp groups (mask 1) {0, 2} and {1, 3}. */
typedef struct tsr_mesh tsr_mesh_t;

typedef struct tsr_mesh_axis_t {
  const char *name;
  int64_t size;
} tsr_mesh_axis_t;

/* Collective over `world`, with the same arguments on every rank. Checks
 * that the world's size equals the product of the axis sizes
 * (TSR_ERROR_MISMATCH naming both; a mesh has at most 6 axes, its masks
 * being below 64), then creates with tsr_comm_split one communicator for
 * every group in `groups` (repeats are fine), for every single axis and for
 * the whole mesh, and binds each to its mask (tsr_comm_bind_axis).
 * tsrt_axis_rank and tsrt_axis_size then answer for every mask, also one
 * without a communicator (a collective on such a group of more than one rank
 * ends the process with a message naming the group). `world` must outlive the
 * mesh. */
TSR_API tsr_status_t tsr_mesh_create(tsr_comm_t *world,
                                     const tsr_mesh_axis_t *axes,
                                     size_t num_axes, const int64_t *groups,
                                     size_t num_groups, tsr_mesh_t **out_mesh);

/* The mesh of an artifact's manifest ("mesh"; none: one rank), with a group
 * for the axes of every one of its collectives, which are described to the
 * runtime for its error messages (tsr_comm_describe_collective). Errors
 * name the artifact directory. */
TSR_API tsr_status_t tsr_mesh_create_for_artifact(
    tsr_comm_t *world, const tsr_artifact_t *artifact, tsr_mesh_t **out_mesh);

/* Unbinds the masks still bound to the mesh's communicators, then destroys
 * them; null is allowed. */
TSR_API void tsr_mesh_destroy(tsr_mesh_t *mesh);

TSR_API size_t tsr_mesh_num_axes(const tsr_mesh_t *mesh);

/* Axis `index`: its name and size, and this rank's coordinate on it. */
TSR_API tsr_status_t tsr_mesh_axis(const tsr_mesh_t *mesh, size_t index,
                                   const char **out_name, int64_t *out_size,
                                   int64_t *out_coordinate);

/* The index of the axis named `name`, or -1. */
TSR_API int64_t tsr_mesh_find_axis(const tsr_mesh_t *mesh, const char *name);

/* The communicator of group `mask`, or null if the mesh made none. The mesh
 * keeps ownership. */
TSR_API tsr_comm_t *tsr_mesh_group(const tsr_mesh_t *mesh, int64_t mask);

/*===----------------------------------------------------------------------===*
 * Bootstrap
 *===----------------------------------------------------------------------===*/

/* Broadcasts `size` bytes from rank 0 to ranks 1..world_size-1 over TCP:
 * rank 0 listens on `port` (all interfaces), the others connect to
 * `address`:`port`, retrying until `timeout_seconds` have passed. Every rank
 * passes the same `size`; ranks other than 0 receive into `bytes`. Rank 0
 * returns once every other rank has received the blob. This is how NCCL's
 * unique id travels without MPI; any blob works. */
TSR_API tsr_status_t tsr_bootstrap_tcp_broadcast(const char *address, int port,
                                                 int rank, int world_size,
                                                 void *bytes, size_t size,
                                                 double timeout_seconds);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_RUNTIME_COMM_H */
