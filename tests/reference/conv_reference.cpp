#include "conv_reference.hpp"

#include <cmath>

namespace gdn_ref {

void conv1d_silu(int C, int W, int L, const std::vector<double>& x, std::vector<double>& state,
                 const std::vector<double>& weight, const std::vector<double>& bias,
                 std::vector<double>& out) {
  const int K = W - 1;
  out.assign(std::size_t(L) * C, 0.0);
  for (int c = 0; c < C; ++c) {
    std::vector<double> h;  // the channel's whole history: old state, then the inputs
    for (int i = 0; i < K; ++i) h.push_back(state[std::size_t(c) * K + i]);
    for (int p = 0; p < L; ++p) h.push_back(x[std::size_t(p) * C + c]);
    for (int p = 0; p < L; ++p) {
      double acc = bias.empty() ? 0.0 : bias[c];
      for (int j = 0; j < W; ++j) acc += weight[std::size_t(c) * W + j] * h[p + j];
      out[std::size_t(p) * C + c] = acc / (1.0 + std::exp(-acc));
    }
    for (int i = 0; i < K; ++i) state[std::size_t(c) * K + i] = h[h.size() - K + i];
  }
}

}  // namespace gdn_ref
