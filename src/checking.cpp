#include <gdn/checking.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace gdn {
namespace {
bool env_default() {
  const char* v = std::getenv("GDN_CHECK_INDICES");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}
std::atomic<bool>& flag() {
  static std::atomic<bool> f(env_default());
  return f;
}
}  // namespace

void set_index_checking(bool enabled) { flag().store(enabled, std::memory_order_relaxed); }
bool index_checking_enabled() { return flag().load(std::memory_order_relaxed); }

}  // namespace gdn
