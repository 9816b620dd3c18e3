#ifndef GDN_TESTS_CONV_REFERENCE_HPP
#define GDN_TESTS_CONV_REFERENCE_HPP

// A deliberately simple float64 reference of the causal depthwise conv1d
// with SiLU (include/gdn/conv1d.hpp), independent of the library: the history
// of each channel as one vector, the convolution as a plain sum.

#include <vector>

namespace gdn_ref {

// One sequence of L tokens, C channels, width W. x: [L][C] pre-conv inputs;
// state: [C][W-1], oldest first, replaced by the last W-1 inputs of (state, x);
// weight: [C][W] (tap W-1 multiplies the current token); bias: [C] or empty;
// out: [L][C], written.
void conv1d_silu(int C, int W, int L, const std::vector<double>& x, std::vector<double>& state,
                 const std::vector<double>& weight, const std::vector<double>& bias,
                 std::vector<double>& out);

}  // namespace gdn_ref

#endif
