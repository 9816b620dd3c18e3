#include <gdn/impl/tuning.hpp>

#include <atomic>

namespace gdn {
namespace Impl {
namespace {
std::atomic<int>& forced_run() {
  static std::atomic<int> r(0);
  return r;
}
std::atomic<int>& forced_teams() {
  static std::atomic<int> t(0);
  return t;
}
}  // namespace

void force_kq_run(int run) { forced_run().store(run, std::memory_order_relaxed); }
int forced_kq_run() { return forced_run().load(std::memory_order_relaxed); }
void force_persistent_teams(int teams) { forced_teams().store(teams, std::memory_order_relaxed); }
int forced_persistent_teams() { return forced_teams().load(std::memory_order_relaxed); }

}  // namespace Impl
}  // namespace gdn
