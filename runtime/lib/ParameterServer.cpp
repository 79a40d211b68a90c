//===- ParameterServer.cpp - Pushes and pulls between workers and servers -===//
//
// A parameter-server artifact runs its step program on N workers (world
// ranks 0 ... N-1) and one update program per server on ranks N ... N+S-1.
// Each server holds some parameters whole, with their optimizer state.
// After every step a worker pushes to each server one message with the
// step number, its loss and the gradients of that server's parameters (in
// the server program's input order), then pulls from each server one
// message with the parameters after the update.
//
// Bulk-synchronous ("sync"): a server takes the pushes of step t from every
// worker in rank order, averages the gradients and the losses (in float64),
// runs its update once and answers every worker, so that the run equals
// data parallelism. Asynchronous ("async", staleness K): a server applies
// each push as it arrives (one update each) and answers a worker that has
// pushed t steps only when the slowest worker has pushed at least t - K
// (stale synchronous parallel, Ho et al. 2013): no worker starts a step
// more than K ahead of the slowest.
//
//===----------------------------------------------------------------------===//
#include "ParameterServer.h"

#include "CommInternal.h"
#include "RuntimeInternal.h"

#include <algorithm>
#include <cstring>

using namespace tsr;

namespace {

/// Every message starts with the step (pushes: the 0-based step the
/// gradients are of; answers: how many updates the server has applied)
/// and a loss.
struct Header {
  int64_t step;
  double loss;
};

int64_t byteSize(const std::vector<tsr_tensor *> &tensors) {
  int64_t bytes = 0;
  for (const tsr_tensor *t : tensors)
    bytes += static_cast<int64_t>(t->byteSize);
  return bytes;
}

void pack(const Header &header, const std::vector<tsr_tensor *> &tensors,
          std::vector<char> &out) {
  out.resize(sizeof(Header) + byteSize(tensors));
  std::memcpy(out.data(), &header, sizeof(Header));
  char *at = out.data() + sizeof(Header);
  for (const tsr_tensor *t : tensors) {
    std::memcpy(at, t->data, t->byteSize);
    at += t->byteSize;
  }
}

Header unpack(const std::vector<char> &message,
              const std::vector<tsr_tensor *> &tensors) {
  Header header;
  std::memcpy(&header, message.data(), sizeof(Header));
  const char *at = message.data() + sizeof(Header);
  for (tsr_tensor *t : tensors) {
    std::memcpy(t->data, at, t->byteSize);
    at += t->byteSize;
  }
  return header;
}

/// Adds the gradients of `message` to `sum` (float64, in order).
void accumulate(const std::vector<char> &message,
                const std::vector<tsr_tensor *> &grads,
                std::vector<double> &sum) {
  const char *at = message.data() + sizeof(Header);
  size_t k = 0;
  for (const tsr_tensor *t : grads) {
    size_t n = t->byteSize / tsr_dtype_size(t->dtype);
    for (size_t i = 0; i < n; ++i, ++k) {
      if (t->dtype == TSR_DTYPE_FLOAT32) {
        float v; // The message is not aligned for floats.
        std::memcpy(&v, at + i * sizeof(float), sizeof(float));
        sum[k] += v;
      } else {
        double v;
        std::memcpy(&v, at + i * sizeof(double), sizeof(double));
        sum[k] += v;
      }
    }
    at += t->byteSize;
  }
}

/// Writes sum / count into the gradient tensors.
void storeMean(const std::vector<double> &sum, int64_t count,
               const std::vector<tsr_tensor *> &grads) {
  size_t k = 0;
  for (tsr_tensor *t : grads) {
    size_t n = t->byteSize / tsr_dtype_size(t->dtype);
    for (size_t i = 0; i < n; ++i, ++k) {
      double mean = sum[k] / static_cast<double>(count);
      if (t->dtype == TSR_DTYPE_FLOAT32)
        static_cast<float *>(t->data)[i] = static_cast<float>(mean);
      else
        static_cast<double *>(t->data)[i] = mean;
    }
  }
}

const ProgramSpec *findProgram(const Manifest &manifest,
                               const std::string &name) {
  for (const ProgramSpec &program : manifest.programs)
    if (program.name == name)
      return &program;
  return nullptr;
}

} // namespace

tsr_status_t ParameterServerLink::create(
    const Manifest &manifest,
    const std::vector<std::unique_ptr<tsr_tensor>> &inputs,
    const std::vector<std::unique_ptr<tsr_tensor>> &outputs,
    std::unique_ptr<ParameterServerLink> &out) {
  const ParameterServerSpec &spec = manifest.parameterServer;
  tsr_comm_t *world = parameterServerWorld();
  if (!world)
    return fail(TSR_ERROR_INVALID_ARGUMENT,
                "the artifact has parameter servers but no communicator of "
                "its workers and servers is bound (create it with "
                "tsr_mesh_create_for_artifact)");
  auto link = std::unique_ptr<ParameterServerLink>(new ParameterServerLink);
  link->spec = spec;
  link->world = world;
  link->rank = tsr_comm_rank(world);
  auto findInput = [&](const std::string &name, tsr_role_t role) {
    for (size_t i = 0; i < manifest.inputs.size(); ++i)
      if (manifest.inputs[i].name == name && manifest.inputs[i].role == role)
        return static_cast<int64_t>(i);
    return int64_t(-1);
  };
  auto checkGradient = [](const tsr_tensor &t) {
    if (t.dtype == TSR_DTYPE_FLOAT32 || t.dtype == TSR_DTYPE_FLOAT64)
      return TSR_OK;
    return fail(TSR_ERROR_UNSUPPORTED,
                "parameter servers average float32 and float64 gradients; '" +
                    t.name + "' is " + tsr_dtype_name(t.dtype));
  };
  if (spec.server >= 0) {
    // This server's program: its parameters, their gradients, the loss.
    for (size_t i = 0; i < manifest.inputs.size(); ++i) {
      const TensorSpec &input = manifest.inputs[i];
      if (input.role == TSR_ROLE_PARAM)
        link->mine.params.push_back(inputs[i].get());
      else if (input.role == TSR_ROLE_GRAD)
        link->mine.grads.push_back(inputs[i].get());
      else if (input.role == TSR_ROLE_LOSS)
        link->lossInput = inputs[i].get();
    }
    for (const tsr_tensor *g : link->mine.grads)
      if (tsr_status_t s = checkGradient(*g))
        return s;
    if (!link->lossInput || link->mine.params.empty() ||
        link->mine.params.size() != link->mine.grads.size())
      return fail(TSR_ERROR_PARSE,
                  "parameter server " + std::to_string(spec.server) +
                      "'s program must take its parameters, a gradient of "
                      "each and the loss");
    out = std::move(link);
    return TSR_OK;
  }
  // A worker: per server, the gradients its program takes, and where the
  // parameters it answers with go.
  for (int64_t s = 0; s < spec.servers; ++s) {
    const ProgramSpec *program = findProgram(manifest, spec.programs[s]);
    Exchange exchange;
    for (const TensorSpec &input : program->inputs) {
      if (input.role != TSR_ROLE_PARAM)
        continue;
      int64_t param = findInput(input.name, TSR_ROLE_PARAM);
      int64_t grad = -1;
      for (size_t o = 0; o < manifest.outputs.size(); ++o)
        if (manifest.outputs[o].of == param)
          grad = static_cast<int64_t>(o);
      if (param < 0 || grad < 0)
        return fail(TSR_ERROR_PARSE,
                    "program '" + program->name + "' of parameter server " +
                        std::to_string(s) + " holds '" + input.name +
                        "', which the step neither takes as a param nor "
                        "differentiates");
      if (tsr_status_t st = checkGradient(*outputs[grad]))
        return st;
      exchange.params.push_back(inputs[param].get());
      exchange.grads.push_back(outputs[grad].get());
    }
    link->servers.push_back(std::move(exchange));
  }
  out = std::move(link);
  return TSR_OK;
}

tsr_status_t ParameterServerLink::sendTo(int peer,
                                         const std::vector<char> &message,
                                         const std::string &label) {
  tsr_comm_set_label(world, label.c_str());
  return tsr_comm_send(world, message.data(), message.size(), TSR_DTYPE_UINT8,
                       peer, nullptr);
}

tsr_status_t ParameterServerLink::receiveFrom(int peer,
                                              std::vector<char> &message,
                                              const std::string &label) {
  tsr_comm_set_label(world, label.c_str());
  return tsr_comm_recv(world, message.data(), message.size(), TSR_DTYPE_UINT8,
                       peer, nullptr);
}

tsr_status_t ParameterServerLink::pullFrom(int64_t s,
                                           std::vector<char> &message,
                                           const std::string &label) {
  tsr_comm_set_patience(world, 2);
  return receiveFrom(static_cast<int>(spec.workers + s), message, label);
}

tsr_status_t ParameterServerLink::start(int64_t steps) {
  // Worker 0 tells the servers how many steps every worker runs.
  if (rank != 0)
    return TSR_OK;
  for (int64_t s = 0; s < spec.servers; ++s) {
    tsr_comm_set_label(
        world,
        ("the step count for parameter server " + std::to_string(s)).c_str());
    if (tsr_status_t st =
            tsr_comm_send(world, &steps, 1, TSR_DTYPE_INT64,
                          static_cast<int>(spec.workers + s), nullptr))
      return st;
  }
  return TSR_OK;
}

tsr_status_t ParameterServerLink::exchange(int64_t step, float &loss) {
  std::vector<char> message;
  // An asynchronous server holds back the answer to a worker that leads
  // the slowest by more than the bound.
  std::string held = spec.staleness < 0
                         ? ""
                         : " (held back while this worker leads the slowest "
                           "by more than " +
                               std::to_string(spec.staleness) + " steps)";
  for (int64_t s = 0; s < spec.servers; ++s) {
    pack(Header{step, loss}, servers[s].grads, message);
    if (tsr_status_t st = sendTo(static_cast<int>(spec.workers + s), message,
                                 "push of the gradients to parameter server " +
                                     std::to_string(s)))
      return st;
  }
  for (int64_t s = 0; s < spec.servers; ++s) {
    message.resize(sizeof(Header) + byteSize(servers[s].params));
    if (tsr_status_t st =
            pullFrom(s, message,
                     "pull of the parameters from parameter server " +
                         std::to_string(s) + held))
      return st;
    Header answer = unpack(message, servers[s].params);
    // Bulk-synchronous servers answer with the mean loss of the step, the
    // one data parallelism reports.
    if (s == 0 && spec.staleness < 0)
      loss = static_cast<float>(answer.loss);
  }
  return TSR_OK;
}

tsr_status_t ParameterServerLink::finish() {
  // Every server sends its final parameters to worker 0, which saves.
  if (rank != 0)
    return TSR_OK;
  std::vector<char> message;
  for (int64_t s = 0; s < spec.servers; ++s) {
    message.resize(sizeof(Header) + byteSize(servers[s].params));
    if (tsr_status_t st = pullFrom(s, message,
                                   "pull of the final parameters from "
                                   "parameter server " +
                                       std::to_string(s)))
      return st;
    unpack(message, servers[s].params);
  }
  return TSR_OK;
}

tsr_status_t
ParameterServerLink::serve(const std::function<tsr_status_t(int64_t)> &update,
                           ParameterServerStats &stats) {
  std::string me = "parameter server " + std::to_string(spec.server);
  int64_t steps = 0;
  tsr_comm_set_label(world, (me + ": the step count from worker 0").c_str());
  if (tsr_status_t s =
          tsr_comm_recv(world, &steps, 1, TSR_DTYPE_INT64, 0, nullptr))
    return s;
  int64_t workers = spec.workers;
  stats = ParameterServerStats{};
  stats.steps = steps;
  std::vector<char> message(sizeof(Header) + byteSize(mine.grads)), answer;
  auto setLoss = [&](double loss) {
    if (lossInput->dtype == TSR_DTYPE_FLOAT64)
      *static_cast<double *>(lossInput->data) = loss;
    else
      *static_cast<float *>(lossInput->data) = static_cast<float>(loss);
  };
  auto wrongStep = [&](int64_t worker, int64_t got, int64_t expected) {
    return fail(TSR_ERROR_IO, "parameter server " +
                                  std::to_string(spec.server) + ": worker " +
                                  std::to_string(worker) + " pushed step " +
                                  std::to_string(got + 1) + ", expected step " +
                                  std::to_string(expected + 1));
  };
  if (spec.staleness < 0) {
    size_t elements = 0;
    for (const tsr_tensor *g : mine.grads)
      elements += g->byteSize / tsr_dtype_size(g->dtype);
    std::vector<double> sum;
    for (int64_t t = 0; t < steps; ++t) {
      sum.assign(elements, 0.0);
      double loss = 0;
      for (int64_t w = 0; w < workers; ++w) {
        if (tsr_status_t s =
                receiveFrom(static_cast<int>(w), message,
                            me + ": worker " + std::to_string(w) +
                                "'s push of step " + std::to_string(t + 1)))
          return s;
        Header header;
        std::memcpy(&header, message.data(), sizeof(Header));
        if (header.step != t)
          return wrongStep(w, header.step, t);
        accumulate(message, mine.grads, sum);
        loss += header.loss;
      }
      storeMean(sum, workers, mine.grads);
      loss /= static_cast<double>(workers);
      setLoss(loss);
      if (tsr_status_t s = update(t))
        return s;
      ++stats.updates;
      pack(Header{t + 1, loss}, mine.params, answer);
      for (int64_t w = 0; w < workers; ++w)
        if (tsr_status_t s =
                sendTo(static_cast<int>(w), answer,
                       me + ": the parameters for worker " + std::to_string(w)))
          return s;
    }
  } else {
    // pushed[w]: the steps worker w has pushed; a worker in `waiting` has
    // pushed and waits for its answer.
    std::vector<int64_t> pushed(workers, 0);
    std::vector<bool> waiting(workers, false);
    int64_t total = steps * workers;
    while (stats.updates < total) {
      // A timeout names the workers the others wait for.
      int64_t slowest = *std::min_element(pushed.begin(), pushed.end());
      std::string behind;
      for (int64_t w = 0; w < workers; ++w)
        if (pushed[w] == slowest)
          behind += (behind.empty() ? "" : ", ") + std::to_string(w);
      tsr_comm_set_label(world, (me + ": the next push (the slowest, worker " +
                                 behind + ", has pushed " +
                                 std::to_string(slowest) + " steps)")
                                    .c_str());
      int peer = -1;
      if (tsr_status_t s = tsr_comm_recv_any(
              world, message.data(), message.size(), TSR_DTYPE_UINT8, &peer))
        return s;
      if (peer < 0 || peer >= workers)
        return fail(TSR_ERROR_IO,
                    "parameter server " + std::to_string(spec.server) +
                        ": a push from rank " + std::to_string(peer) +
                        ", which is not a worker");
      Header header = unpack(message, mine.grads);
      if (header.step != pushed[peer])
        return wrongStep(peer, header.step, pushed[peer]);
      setLoss(header.loss);
      if (tsr_status_t s = update(stats.updates))
        return s;
      ++stats.updates;
      ++pushed[peer];
      waiting[peer] = true;
      // Answer every waiting worker the bound lets start its next step.
      slowest = *std::min_element(pushed.begin(), pushed.end());
      for (int64_t w = 0; w < workers; ++w) {
        if (!waiting[w])
          continue;
        int64_t lead = pushed[w] - slowest;
        if (pushed[w] < steps && lead > spec.staleness) {
          if (w == peer)
            ++stats.waits;
          continue;
        }
        if (pushed[w] < steps)
          stats.maxLead = std::max(stats.maxLead, lead);
        pack(Header{stats.updates, header.loss}, mine.params, answer);
        if (tsr_status_t s =
                sendTo(static_cast<int>(w), answer,
                       me + ": the parameters for worker " + std::to_string(w)))
          return s;
        waiting[w] = false;
      }
    }
  }
  // The final parameters, for worker 0 to save.
  pack(Header{stats.updates, 0.0}, mine.params, answer);
  return sendTo(0, answer, me + ": the final parameters for worker 0");
}
