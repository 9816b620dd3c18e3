// A seeded randomized sweep over shapes, window lengths, RING_LEN, acceptances,
// layouts and dtypes; every case runs the full cycle of cycle.hpp.
#include "cycle.hpp"

namespace gdn_test {
namespace {

TEST(Sweep, RandomizedCycles) {
  std::mt19937_64 rng(20261129);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int cases = 36;
  for (int c = 0; c < cases; ++c) {
    CycleSpec cs;
    const int nk = pick(1, 3);
    const int G = 1 << pick(0, 2);  // 1, 2, 4
    const int d = pick(0, 1) ? 128 : 64;
    cs.cfg = heads(nk, nk * G, d);
    cs.ring_len = pick(1, 16);
    const int B = pick(0, 6);
    for (int b = 0; b < B; ++b) cs.lens.push_back(pick(0, cs.ring_len + 3));
    cs.pad = pick(0, 5);
    cs.layout = static_cast<Layout>(pick(0, 3));
    cs.seed = rng();
    const int dtype = pick(0, 3);
    SCOPED_TRACE("case " + std::to_string(c) + ": nk=" + std::to_string(nk) +
                 " G=" + std::to_string(G) + " D=" + std::to_string(d) + " B=" + std::to_string(B) +
                 " RING_LEN=" + std::to_string(cs.ring_len) + " layout=" + layout_name(cs.layout) +
                 " dtype=" + std::to_string(dtype));
    switch (dtype) {
      case 0:
        run_cycle<float, float>(cs);
        break;
      case 1:
        run_cycle<gdn::bf16, float>(cs);
        break;
      case 2:
        run_cycle<float, gdn::bf16>(cs);
        break;
      default:
        run_cycle<gdn::bf16, gdn::bf16>(cs);
        break;
    }
    if (HasFailure()) break;  // the trace above names the first failing case
  }
}

}  // namespace
}  // namespace gdn_test
