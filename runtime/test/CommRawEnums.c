/*===- CommRawEnums.c - Enum arguments outside their enumerators --------===*\
|*                                                                            *|
|* C callers may pass any int where Comm.h takes an enum; C++ cannot even    *|
|* form such a value without undefined behaviour, so CommTest.cpp calls      *|
|* through these.                                                             *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "tessera-runtime/Comm.h"

tsr_status_t commInitRaw(int backend, tsr_comm_t **out_comm) {
  return tsr_comm_init(backend, 0, out_comm);
}

tsr_status_t allReduceRaw(tsr_comm_t *comm, void *data, size_t count, int dtype,
                          int op) {
  return tsr_comm_all_reduce(comm, data, data, count, dtype, op, 0);
}
