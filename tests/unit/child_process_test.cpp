// support/child_process: a program bertc runs is waited for with its exit told, runs in a process
// group of its own (a terminal's Ctrl-C reaches bertc alone), and end_children_now() ends that
// whole group at once (the driver and what it started), so that nothing outlives a hard stop.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "scratch_folder.h"
#include "support/child_process.h"

namespace bertc::support {
namespace {

std::filesystem::path scratch(const std::string& name) { return testing::scratch_in("bertc-child-process-test", name); }

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Gone, or a zombie no one has reaped yet (it runs no more).
bool ended(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, name, state;
  return !(stat >> pid_field >> name >> state) || state == "Z";
}

TEST(ChildProcess, ReportsTheExitAndTheOutput) {
  const ChildEnd end = run_child({"sh", "-c", "echo said; echo also >&2; exit 3"}, scratch("exit.log"));
  EXPECT_EQ(end.status, 3);
  EXPECT_EQ(end.failure, "");
  EXPECT_EQ(read(scratch("exit.log")), "said\nalso\n");
  EXPECT_TRUE(running_children().empty());  // (no longer listed once waited for)
}

TEST(ChildProcess, SaysAProgramThatCannotBeRun) {
  const ChildEnd end = run_child({"/nonexistent/bertc-no-compiler"}, scratch("missing.log"));
  EXPECT_EQ(end.status, -1);
  EXPECT_TRUE(end.failure.starts_with("cannot be run: No such file")) << end.failure;
}

TEST(ChildProcess, EndingChildrenEndsTheWholeGroupAtOnce) {
  const auto pids = scratch("pids");
  ChildEnd end;
  const auto began = std::chrono::steady_clock::now();
  // A driver that starts a worker and waits for it, as c++ does cc1plus.
  std::thread waiter([&] {
    end = run_child({"sh", "-c", "sleep 120 & echo $! > '" + pids.string() + "'; wait"}, scratch("group.log"));
  });
  while ((running_children().empty() || read(pids).empty()) && std::chrono::steady_clock::now() - began < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(running_children().size(), 1u);
  const pid_t driver = running_children()[0];
  const pid_t worker = std::stoi(read(pids));
  EXPECT_EQ(::getpgid(driver), driver);  // a group of its own, led by the driver
  EXPECT_EQ(::getpgid(worker), driver);  // and what the driver runs is in it
  EXPECT_NE(::getpgid(driver), ::getpgrp());
  end_children_now();
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(60));  // (not the worker's 120 s)
  EXPECT_EQ(end.failure.rfind("was killed by signal 9", 0), 0u) << end.failure;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ended(worker) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(ended(worker)) << "the driver's worker outlived end_children_now()";
}

}  // namespace
}  // namespace bertc::support
