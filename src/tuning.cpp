#include <gdn/impl/tuning.hpp>

#include <atomic>

namespace gdn {
namespace Impl {
namespace {
std::atomic<int>& forced_run() {
  static std::atomic<int> r(0);
  return r;
}
}  // namespace

void force_kq_run(int run) { forced_run().store(run, std::memory_order_relaxed); }
int forced_kq_run() { return forced_run().load(std::memory_order_relaxed); }

}  // namespace Impl
}  // namespace gdn
