// support/child_process: a program bertc runs is waited for with its exit told, runs in a process
// group of its own (a terminal's Ctrl-C reaches bertc alone), and end_children_now() ends that
// whole group at once (the driver and what it started), so that nothing outlives a hard stop.
#include <signal.h>
#include <unistd.h>

#include <atomic>
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

TEST(ChildProcess, SaysAProgramASignalEnded) {
  const ChildEnd end = run_child({"sh", "-c", "kill -9 $$"}, scratch("killed.log"));
  EXPECT_EQ(end.status, -1);
  EXPECT_EQ(end.failure.rfind("was killed by signal 9", 0), 0u) << end.failure;
}

// (Last in this file: once bertc is ending, a child that dies is never reported again.)
TEST(ChildProcess, EndingChildrenEndsTheWholeGroupAtOnce) {
  const auto pids = scratch("pids");
  std::atomic<bool> returned{false};
  const auto began = std::chrono::steady_clock::now();
  // A driver that starts a worker and waits for it, as c++ does cc1plus.
  std::thread waiter([&] {
    run_child({"sh", "-c", "sleep 120 & echo $! > '" + pids.string() + "'; wait"}, scratch("group.log"));
    returned = true;
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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(ended(worker) && ended(driver)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(ended(driver)) << "the driver outlived end_children_now()";
  EXPECT_TRUE(ended(worker)) << "the driver's worker outlived end_children_now()";
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(60));  // (not the worker's 120 s)
  // Whoever ended the children ends the process: run_child waits for that rather than reporting a
  // failure that would race the exit with words and a status of its own (bertc's second signal).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(returned.load()) << "run_child reported a child that bertc's ending killed";
  waiter.detach();
}

}  // namespace
}  // namespace bertc::support
