// bertc estimate: data-parallel step time, days and cost of a config on GPUs of the GPU table,
// several per machine and several machines, for each gradient compression.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "frontend/model.h"
#include "driver/compile_flags.h"

namespace bertc::driver {

struct EstimateArgs {
  std::string config;
  std::vector<std::string> gpus = {"p40"};          // names or archs of the GPU table
  int gpus_per_machine = 1, machines = 1;
  std::string within = "pcie3", between = "10gbe";  // interconnect names (passes/scaling_estimate.h)
  bool within_given = false, between_given = false;  // named on the command line (unused ones are said)
  std::vector<std::string> compressions;            // empty: every one
  int64_t steps = 0;                                // 0: [train] steps
  double price = -1;                                // dollars per GPU-hour; < 0: the table's cloud price, if any
  double latency_us = -1;                           // a hop's latency between machines; < 0: the link's own
  bool json = false;
};

// Prints the table (or JSON) to `out`. Throws std::invalid_argument for a bad name or count.
int estimate(const EstimateArgs& args, const CompileFlags& flags, const frontend::ModelDefinition& model, std::ostream& out);

}  // namespace bertc::driver
