//===- ParameterServer.h - Pushes and pulls of parameter servers -*- C++
//-*-===//
//
// The exchange between the workers and the servers of a parameter-server
// artifact (ParameterServer.cpp describes the protocol). Nothing here is
// part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TESSERA_RUNTIME_LIB_PARAMETERSERVER_H
#define TESSERA_RUNTIME_LIB_PARAMETERSERVER_H

#include "RuntimeInternal.h"
#include "tessera-runtime/Comm.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tsr {

/// What a server did: the steps each worker ran, the updates it applied,
/// how often a worker had to wait for the slowest (async), and the largest
/// lead over the slowest it let a worker start a step with.
struct ParameterServerStats {
  int64_t steps = 0, updates = 0, waits = 0, maxLead = 0;
};

class ParameterServerLink {
public:
  /// Pairs the trainer's tensors (`inputs` and `outputs` of this process's
  /// step) with the messages of the exchange.
  static tsr_status_t
  create(const Manifest &manifest,
         const std::vector<std::unique_ptr<tsr_tensor>> &inputs,
         const std::vector<std::unique_ptr<tsr_tensor>> &outputs,
         std::unique_ptr<ParameterServerLink> &out);

  /// Worker: before the first step, tells the servers (from worker 0) how
  /// many steps every worker runs.
  tsr_status_t start(int64_t steps);
  /// Worker: after 0-based step `step`, pushes its gradients and `loss`
  /// and pulls the parameters; sync servers answer with the step's mean
  /// loss, which replaces `loss`.
  tsr_status_t exchange(int64_t step, float &loss);
  /// Worker: after the last step, worker 0 pulls the final parameters.
  tsr_status_t finish();

  /// Server: applies the workers' pushes with `update` (which runs the
  /// server's program as step k) until every worker has run its steps,
  /// then sends worker 0 the final parameters.
  tsr_status_t serve(const std::function<tsr_status_t(int64_t)> &update,
                     ParameterServerStats &stats);

private:
  ParameterServerLink() = default;
  /// A send or receive of the world, named `label` for the watchdog.
  tsr_status_t sendTo(int peer, const std::vector<char> &message,
                      const std::string &label);
  tsr_status_t receiveFrom(int peer, std::vector<char> &message,
                           const std::string &label);
  /// A worker's receive from server `s`, which answers once it has the
  /// pushes it waits for: past a timeout the server's own watchdog names
  /// the worker that did not push, so this waits twice as long before
  /// blaming the server.
  tsr_status_t pullFrom(int64_t s, std::vector<char> &message,
                        const std::string &label);

  /// The parameters and gradients of one server, in its program's order.
  struct Exchange {
    std::vector<tsr_tensor *> params, grads;
  };

  ParameterServerSpec spec;
  tsr_comm_t *world = nullptr;
  int rank = 0;
  /// Worker: one exchange per server.
  std::vector<Exchange> servers;
  /// Server: its own parameters and gradient inputs, and the loss input.
  Exchange mine;
  tsr_tensor *lossInput = nullptr;
};

} // namespace tsr

#endif // TESSERA_RUNTIME_LIB_PARAMETERSERVER_H
