// gdn_bench: Google Benchmark drivers for recurrence_fwd, recurrence_verify_ring
// and state_fold on Kokkos::DefaultExecutionSpace (Cuda in a CUDA build,
// OpenMP otherwise).
//
// Cases (names are `kernel/shape/key:value/...`, parsed by perf/render.py):
//   fwd/D<d>/state:<s>/B:<b>/T:<t>          every row T tokens; T = 1 is plain decode
//   verify/D<d>/state:<s>/B:<b>/T:<t>       every row T tokens, RING_LEN = T: records
//                                           written, state read and not written
//   prefill/D<d>/state:<s>/B:<b>/T:<t>      recurrence_fwd over B prompts of T tokens each
//                                           (B x T in 1 x 1024, 1 x 4096, 1 x 8192,
//                                           4 x 4096, 16 x 4096; D = 128); built
//                                           against an earlier tree whose forward took a
//                                           workspace (the chunked one) with one,
//                                           allocated before timing
//   prefill/.../fused                       such a tree's prefill without a workspace
//   prefill_tc/D128/state:<s>/B:<b>/T:<t>/precision:<p>
//                                           recurrence_prefill (the chunked WY/UT form,
//                                           tensor cores on CUDA) over the prefill shapes,
//                                           precision bf16 or tf32x3 (bf16 also with
//                                           /act:bf16 before /precision), with a workspace
//                                           allocated before timing; flops counted as the
//                                           forward's (7*Dk*Dv per token and head)
//   fold/D<d>/state:<s>/L:<l>/B:<b>/T:<t>   RING_LEN = T, num_accepted = T for every
//                                           row; L = 1 (one layer per launch) and
//                                           L = 36 (the GDN layers of a
//                                           Qwen3-Next-80B-style model, one launch)
//   .../act:bf16                            fwd, verify, prefill with bf16 activations
//                                           (qkv, gates, out; TokenInputs<M, gdn::bf16>)
//   .../gates:raw                           the same with raw gates a, b, A_log, dt_bias
//                                           (GateInputs): decay and beta computed in the
//                                           kernel. Without these keys: float activations,
//                                           decay and beta given. Input variants run at
//                                           D = 128, bf16 state, T in {1, 4, 16} (fwd,
//                                           verify) and for two prompt sizes (prefill).
//   conv_fwd/D128/act:<a>/B:<b>/T:<t>       conv1d_fwd (W = 4, with bias, out of type <a>) over
//                                           B rows of T tokens, conv state committed
//   conv_verify/D128/act:<a>/B:<b>/T:<t>    conv1d_verify_ring, RING_LEN = T: the window's
//                                           inputs recorded, conv state read only
//   fold/D128/.../conv                      the fold with the conv pools too (ConvFold of
//                                           the state's type, W = 4): one launch for both,
//                                           L = 1 and 36, T in {1, 4, 16}; bytes add the
//                                           conv states' W-1 inputs read and written
//   conv_prefill/D128/act:<a>/B:<b>/T:<t>   conv1d_fwd over the prefill shapes
//   step/D128/state:<s>/L:36/B:<b>/T:<t>/lazy   one layer's speculative step, the layers
//   step/D128/state:<s>/L:36/B:<b>/T:<t>/eager  taken in turn over pools of 36 layers (so
//                                           the states come from memory): the lazy flow
//                                           (recurrence_verify_lazy + lazy_accept, history
//                                           capacity 3 T, flushes amortised: a row whose
//                                           window overflows is committed by the verify)
//                                           or the eager one (recurrence_verify_ring +
//                                           state_fold); every row T tokens, a random
//                                           1 .. T accepted (16 draws in turn). Bytes: the
//                                           floor of a step, one state read, the tokens and
//                                           the window's records
//   (conv cases: conv_dim = 8192 at D128, activations <a> float or bf16, T in {1, 4, 16};
//   bytes: qkv read, out written, conv state read (and written), conv ring written or
//   read, weights and bias, index arrays; flops: 2*W per output)
// Shapes: nk = 16, nv = 32, Dk = Dv = d with d = 128 (Qwen3-Next's GDN layer)
// and d = 64. State float or bf16; ring float, record_stride =
// ring_record_elements rounded up to 16 bytes (GDN_BENCH_RECORD_ALIGN floats,
// default 4; padding is not counted in the bytes moved). B in {1, 8, 32, 128, 256, 512}
// up to GDN_BENCH_MAX_BATCH (default 32 on the host, 512 on a GPU), T in
// {1, 2, 4, 8, 16}. A case whose buffers exceed GDN_BENCH_MAX_GIB (default 8 on the
// host, 100 on a GPU) is not registered.
//
// Older gdn sources (scripts/gpu_run.sh --baseline builds an earlier commit with this file):
// without gdn/conv_inputs.hpp (release 0.1.0: float activations and given gates only, no
// conv1d, no ConvFold) the act:bf16, gates:raw, conv_* and fold .../conv cases are not
// registered; the other cases keep their names, so both builds run the same filter.
//
// Method.
//   - Buffers: one set per case, allocated and filled with random values
//     (never zeros) on the device: qkv in [-1, 1], decay in [0.8, 1), beta in
//     [0.05, 0.95) (raw gates: a in [-2, 1), b in [-3, 3), A_log in [-2, 0),
//     dt_bias in [-0.5, 0.5)), state in [-0.5, 0.5); fold records: k in [-1, 1],
//     u in [-0.02, 0.02], decay in [0.8, 0.99). Row b uses pool row b (fold:
//     layer l, row b uses pool row and ring row l*B + b), so the state a call
//     touches is B (x L) distinct rows: 2 MiB per row at D128/float, 256 KiB
//     at D64/bf16. The pool is larger than an H200's 50 MiB L2 from B = 32
//     (D128/float) or B = 256 (D64/bf16); on a host the last-level cache
//     (e.g. 32 MiB of L3) holds the whole state at small B. Below those sizes
//     the state stays cache resident across calls (what a decode loop over
//     the same rows sees too), so bw_frac can exceed what DRAM alone allows.
//     Inputs are not rotated between calls.
//   - fwd and fold write the state on every call; the values stay bounded
//     (decay < 1, the delta rule contracts, fold's records are small), and
//     after timing every case checks its state, outputs and records for
//     inf/NaN and reports an error if any appear.
//   - Timing: warm-up (at least 2 calls and 20 ms), then samples of
//     `fence; Kokkos::Timer; call; fence` until at least 10 samples and
//     GDN_BENCH_MIN_TIME seconds (default 0.2 on the host, 0.1 on a GPU) of
//     samples, at most 5000. The case reports the MEDIAN sample: it runs as
//     one Google Benchmark iteration (Iterations(1), UseManualTime) whose
//     SetIterationTime is that median, so `real_time` in the JSON is the
//     median as well; --benchmark_min_time has no effect,
//     --benchmark_repetitions repeats the whole measurement. Index checking
//     (GDN_CHECK_INDICES) is switched off.
//   - Google Benchmark appends `/iterations:1/manual_time` to every name.
//   - Counters: time_us (median), min_us, host_us (median time until the
//     call returned, before its fence: validation, launch; on a GPU the
//     kernel runs on after it), samples, bytes (the minimal bytes moved,
//     each counted once: state read, and written where the kernel writes it;
//     qkv, decay, beta (or a, b), out, in the activation type's bytes; A_log
//     and dt_bias; ring records written (verify) or read (fold),
//     used elements only; index arrays), flops (per token and value head, FMA = 2:
//     verify 4*Dk*Dv, the two projections S0^T k and S0^T q of step 1; fwd and
//     prefill 7*Dk*Dv, those plus the fold's multiply and FMA per state element;
//     fold 3*Dk*Dv per record; the chunk's small O(C) terms are not counted), GB/s, TFLOP/s,
//     bw_frac = (bytes/time)/copy_bw and
//     roofline_frac = max(bytes/copy_bw, flops/fp32_peak)/time.
//   - copy_bw and fp32_peak are measured in the same run, before the cases
//     (machine.cpp), and put in the JSON context next to the backend and
//     device; copy_bw is measured again after the cases and printed, a check
//     that the machine did not change under the run (shared hosts do).
//   - launch_floor_us (context): an empty Kokkos kernel timed like a case,
//     the fixed part of every sample (on CUDA also cuda_launch_floor_us, the
//     same without Kokkos); it weighs on the small cases' fractions.
//     launch_host_us / cuda_launch_host_us: of those, the time until the
//     launch call returned; launch_floor_device_us: of launch_floor_us, the
//     empty kernel's own GPU-side duration.
//   - gpu_us (CUDA only): the median GPU-side duration of the call's kernel,
//     timed with CUDA events queued behind a spinning kernel (machine.cpp,
//     device_time), 21 samples after the fenced ones, so that they do not
//     disturb those. time_us - gpu_us is what the fenced call pays outside
//     its kernel (launch, synchronisation, host work): the part no kernel
//     can win back, which bounds the fractions of the small cases.
//   - copy_us: a copy of the case's own byte count, timed the same way: a
//     `Kokkos::deep_copy(space, dst, src)` of bytes / 2 (half read, half
//     written) between two buffers of the size copy_bw uses, kept for the
//     whole run, the median of 21 fenced calls after 3 warm-up ones; on CUDA
//     also copy_gpu_us, its GPU-side duration (device_time, 21 samples).
//     copy_ratio = copy_us / time_us: 1 means the call took as long as a
//     copy of its bytes. copy_bw is the rate of a 4 GiB copy; a small copy
//     runs below it (ramp-up, tail, launch), so copy_ratio shows how much of
//     a small case's distance from its roofline a copy of the same size
//     pays too. Only cases of at most 2 x the copy buffer's bytes;
//     GDN_BENCH_COPY=0 leaves it out.

#include <benchmark/benchmark.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <gdn/gdn.hpp>
#include <string>
#include <utility>
#include <vector>

#include "machine.hpp"

// The engine inputs: TokenInputs<M, ActT>, GateInputs, conv1d, ConvInputs and ConvFold.
#if __has_include(<gdn/conv_inputs.hpp>)
#define GDN_BENCH_ENGINE_INPUTS 1
#else
#define GDN_BENCH_ENGINE_INPUTS 0
#endif
// The forward's workspace (the prefill cases pass one).
#if __has_include(<gdn/workspace.hpp>)
#define GDN_BENCH_WORKSPACE 1
#else
#define GDN_BENCH_WORKSPACE 0
#endif
// The chunked prefill (the prefill_tc cases).
#if __has_include(<gdn/recurrence_prefill.hpp>)
#define GDN_BENCH_PREFILL_TC 1
#else
#define GDN_BENCH_PREFILL_TC 0
#endif
// The lazy flow (the step cases' lazy variant).
#if __has_include(<gdn/lazy_commit.hpp>)
#define GDN_BENCH_LAZY 1
#else
#define GDN_BENCH_LAZY 0
#endif

namespace gdn_bench {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;
template <class T>
using Pool = Kokkos::View<T****, Kokkos::LayoutRight, Mem>;  // state [slots, nv, Dk, Dv] or ring
using Index = Kokkos::View<std::uint32_t*, Mem>;             // [B] or [B+1]
using Table = Kokkos::View<std::uint32_t**, Mem>;            // [L, B]
using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;

constexpr int kNumKeyHeads = 16;
constexpr int kNumValueHeads = 32;
constexpr int kModelLayers = 36;  // GDN layers of a Qwen3-Next-80B-style model

Machine g_machine;  // measured before the cases are registered

// The buffers of the same-bytes copy (copy_us): allocated by the first case that needs them,
// released before Kokkos::finalize.
Kokkos::View<float*, Kokkos::DefaultExecutionSpace::memory_space> g_copy_src, g_copy_dst;

// ---------------------------------------------------------------------------
// Settings from the environment.
double env_double(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  return (end != v && d > 0) ? d : fallback;
}

struct Settings {
  int max_batch = 32;
  double max_bytes = 8.0 * (1ull << 30);
  double min_time = 0.2;
  int min_samples = 10;
  int max_samples = 5000;
  bool same_bytes_copy = true;  // copy_us (GDN_BENCH_COPY=0: off)
  int record_align = 4;         // floats (GDN_BENCH_RECORD_ALIGN)
};

Settings settings_for(const Machine& m) {
  Settings s;
  s.max_batch = static_cast<int>(env_double("GDN_BENCH_MAX_BATCH", m.host ? 32 : 512));
  s.max_bytes = env_double("GDN_BENCH_MAX_GIB", m.host ? 8 : 100) * double(1ull << 30);
  s.min_time = env_double("GDN_BENCH_MIN_TIME", m.host ? 0.2 : 0.1);
  const char* copy = std::getenv("GDN_BENCH_COPY");
  s.same_bytes_copy = copy == nullptr || std::string(copy) != "0";
  s.record_align = std::max(1, static_cast<int>(env_double("GDN_BENCH_RECORD_ALIGN", 4)));
  return s;
}

// ---------------------------------------------------------------------------
// Random fill on the device: a counter-based hash, so any size and element type works.
KOKKOS_INLINE_FUNCTION float unit_hash(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;  // splitmix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
}

KOKKOS_INLINE_FUNCTION void store(float& dst, float x) { dst = x; }
KOKKOS_INLINE_FUNCTION void store(gdn::bf16& dst, float x) { dst = gdn::bf16(x); }
KOKKOS_INLINE_FUNCTION float load(float x) { return x; }
KOKKOS_INLINE_FUNCTION float load(gdn::bf16 x) { return static_cast<float>(x); }

template <class T>
struct FillUniform {
  T* m_data;
  float m_lo, m_span;
  std::uint64_t m_seed;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    store(m_data[i], m_lo + m_span * unit_hash(m_seed, static_cast<std::uint64_t>(i)));
  }
};

using BigRange = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;

template <class T>
void fill_uniform(T* data, std::size_t n, float lo, float hi, std::uint64_t seed) {
  Kokkos::parallel_for("gdn_bench::fill", BigRange(0, static_cast<std::int64_t>(n)),
                       FillUniform<T>{data, lo, hi - lo, seed});
}

// Fold records: k, then u of every group position, then the decays (ring.hpp).
struct FillRecords {
  float* m_data;
  std::int64_t m_stride;
  int m_dk, m_u_end;  // [0, m_dk) key, [m_dk, m_u_end) delta factors, then decays
  std::uint64_t m_seed;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const int e = static_cast<int>(i % m_stride);
    const float r = unit_hash(m_seed, static_cast<std::uint64_t>(i));
    m_data[i] = e < m_dk ? -1.0f + 2.0f * r : (e < m_u_end ? -0.02f + 0.04f * r : 0.8f + 0.19f * r);
  }
};

// Elements of [data, data + n) that are inf or NaN.
template <class T>
struct CountNonFinite {
  const T* m_data;
  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i, long& bad) const {
    const float x = load(m_data[i]);
    if (!(x - x == 0.0f)) ++bad;
  }
};

template <class T>
long count_non_finite(const T* data, std::size_t n) {
  long bad = 0;
  Kokkos::parallel_reduce("gdn_bench::check", BigRange(0, static_cast<std::int64_t>(n)),
                          CountNonFinite<T>{data}, bad);
  return bad;
}

Index make_index(const std::vector<std::uint32_t>& v) {
  Index d("gdn_bench::index", v.size());
  auto h = Kokkos::create_mirror_view(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

// entry (l, b) = (first_row + l) * cols + b
Table make_table(int rows, int cols, int first_row = 0) {
  Table d("gdn_bench::table", rows, cols);
  auto h = Kokkos::create_mirror_view(d);
  for (int l = 0; l < rows; ++l)
    for (int b = 0; b < cols; ++b) h(l, b) = static_cast<std::uint32_t>((first_row + l) * cols + b);
  Kokkos::deep_copy(d, h);
  return d;
}

// ---------------------------------------------------------------------------
// One case: its shape, the bytes and flops it must move and compute, its buffers' size.
enum class Kernel { Fwd, Verify, Fold, Prefill, ConvFwd, ConvVerify, ConvPrefill, Step, PrefillTC };
constexpr int kConvWidth = 4;  // Qwen3-Next's conv kernel width

struct Case {
  Kernel kernel = Kernel::Fwd;
  int dim = 128;  // Dk = Dv
  bool bf16_state = false;
  int batch = 1;
  int window = 1;          // T: tokens per row (fwd, verify), accepted records per row (fold)
  int record_align = 4;    // record_stride: a multiple of this many floats
  int layers = 1;          // fold only
  bool bf16_act = false;   // fwd, verify, prefill: bf16 activations
  bool raw_gates = false;  // fwd, verify, prefill: GateInputs
  bool fused = false;      // prefill: without a workspace (the coefficients in the sequential pass)
  bool conv_pools = false;  // fold: the conv pools too (ConvFold of the state's type)
  bool lazy = false;        // step: the lazy flow (else the eager one)
  bool tc_bf16 = false;     // prefill_tc: precision bf16 (else tf32x3)

  gdn::HeadConfig cfg() const { return gdn::HeadConfig{kNumKeyHeads, kNumValueHeads, dim, dim}; }
  double state_row_bytes() const {
    return double(kNumValueHeads) * dim * dim * (bf16_state ? 2.0 : 4.0);
  }
  std::size_t record_elements() const {
    return gdn::ring_record_elements(dim, dim, cfg().group_size());
  }
  std::size_t record_stride() const {
    const std::size_t a = static_cast<std::size_t>(record_align);
    return (record_elements() + a - 1) / a * a;
  }
  double tokens() const { return double(batch) * window; }
  double token_bytes() const {  // qkv + decay + beta (or a + b) read, out written
    return (bf16_act ? 2.0 : 4.0) *
           (double(cfg().conv_dim()) + 2.0 * kNumValueHeads + double(cfg().value_dim()));
  }
  double gate_param_bytes() const { return raw_gates ? 2.0 * 4.0 * kNumValueHeads : 0.0; }
  double records() const { return double(layers) * batch * window * kNumKeyHeads; }
  bool conv() const {
    return kernel == Kernel::ConvFwd || kernel == Kernel::ConvVerify ||
           kernel == Kernel::ConvPrefill;
  }
  double act_bytes() const { return bf16_state ? 2.0 : 4.0; }  // conv activations and pools
  double conv_dim() const { return double(cfg().conv_dim()); }
  double conv_state_row_bytes() const { return conv_dim() * (kConvWidth - 1) * act_bytes(); }

  std::string name() const {
    const char* k = kernel == Kernel::Fwd          ? "fwd"
                    : kernel == Kernel::Prefill    ? "prefill"
                    : kernel == Kernel::PrefillTC  ? "prefill_tc"
                    : kernel == Kernel::Verify     ? "verify"
                    : kernel == Kernel::Fold       ? "fold"
                    : kernel == Kernel::ConvFwd    ? "conv_fwd"
                    : kernel == Kernel::ConvVerify ? "conv_verify"
                    : kernel == Kernel::Step       ? "step"
                                                   : "conv_prefill";
    if (conv()) {
      std::string n =
          std::string(k) + "/D" + std::to_string(dim) + "/act:" + (bf16_state ? "bf16" : "float");
      return n + "/B:" + std::to_string(batch) + "/T:" + std::to_string(window);
    }
    std::string n =
        std::string(k) + "/D" + std::to_string(dim) + "/state:" + (bf16_state ? "bf16" : "float");
    if (kernel == Kernel::Fold || kernel == Kernel::Step) n += "/L:" + std::to_string(layers);
    n += "/B:" + std::to_string(batch) + "/T:" + std::to_string(window);
    if (bf16_act) n += "/act:bf16";
    if (raw_gates) n += "/gates:raw";
    if (conv_pools) n += "/conv";
    if (kernel == Kernel::Step) n += lazy ? "/lazy" : "/eager";
    if (fused) n += "/fused";
    if (kernel == Kernel::PrefillTC) n += tc_bf16 ? "/precision:bf16" : "/precision:tf32x3";
    return n;
  }

  double min_bytes() const {
    const double idx = 4.0;
    const double conv_tokens = tokens() * conv_dim() * 2.0 * act_bytes();  // qkv in, out
    const double weights = conv_dim() * (kConvWidth + 1) * 4.0;
    switch (kernel) {
      case Kernel::ConvFwd:  // conv state read + written
      case Kernel::ConvPrefill:
        return conv_tokens + weights + 2.0 * batch * conv_state_row_bytes() +
               idx * (2.0 * batch + 1);
      case Kernel::ConvVerify:  // conv state read, the window's inputs recorded
        return conv_tokens + weights + batch * conv_state_row_bytes() +
               tokens() * conv_dim() * act_bytes() + idx * (3.0 * batch + 1);
      case Kernel::Fwd:  // state read + written, tokens, offsets + slots
      case Kernel::Prefill:
      case Kernel::PrefillTC:
        return 2.0 * batch * state_row_bytes() + tokens() * token_bytes() + gate_param_bytes() +
               idx * (2.0 * batch + 1);
      case Kernel::Verify:  // state read, tokens, records written, offsets + slots + ring slots
      case Kernel::Step:    // the floor of a step: a verify's bytes (one state read)
        return batch * state_row_bytes() + tokens() * token_bytes() + gate_param_bytes() +
               double(batch) * window * kNumKeyHeads * record_elements() * 4.0 +
               idx * (3.0 * batch + 1);
      case Kernel::Fold:  // state read + written, records read, two tables + num_accepted;
      default:            // conv pools: W-1 inputs read (ring, or the old row), W-1 written
        return 2.0 * layers * batch * state_row_bytes() + records() * record_elements() * 4.0 +
               (conv_pools ? 2.0 * layers * batch * conv_state_row_bytes() : 0.0) +
               idx * (2.0 * layers * batch + batch);
    }
  }
  double flops() const {
    const double per_head = double(dim) * dim;
    if (conv()) return tokens() * conv_dim() * 2.0 * kConvWidth;
    if (kernel == Kernel::Fold)
      return double(layers) * batch * window * kNumValueHeads * 3.0 * per_head;
    if (kernel == Kernel::Verify || kernel == Kernel::Step)
      return tokens() * kNumValueHeads * 4.0 * per_head;
    return tokens() * kNumValueHeads * 7.0 * per_head;
  }
  double footprint() const {
    const double ring = double(layers) * batch * kNumKeyHeads * window * record_stride() * 4.0;
    const double conv_ring = double(layers) * batch * window * conv_dim() * act_bytes();
    switch (kernel) {
      case Kernel::ConvFwd:
      case Kernel::ConvPrefill:
        return batch * conv_state_row_bytes() + tokens() * conv_dim() * 2.0 * act_bytes();
      case Kernel::ConvVerify:
        return batch * conv_state_row_bytes() + tokens() * conv_dim() * 2.0 * act_bytes() +
               conv_ring;
      case Kernel::Fwd:
      case Kernel::Prefill:
        return batch * state_row_bytes() + tokens() * token_bytes();
      case Kernel::PrefillTC:  // the workspace: about 4 C D + C^2 floats per chunk and head
        return batch * state_row_bytes() + tokens() * token_bytes() +
               (tokens() / 64.0 + batch) * kNumValueHeads * (4.0 * 64 * dim + 64.0 * 64) * 4.0;
      case Kernel::Verify:
        return batch * state_row_bytes() + tokens() * token_bytes() + ring;
      case Kernel::Step:  // pools of every layer, the history 3 windows
        return double(layers) * batch * state_row_bytes() + tokens() * token_bytes() +
               (lazy ? 3.0 : 1.0) * ring;
      case Kernel::Fold:
      default:
        return double(layers) * batch * state_row_bytes() + ring +
               (conv_pools ? layers * batch * conv_state_row_bytes() + conv_ring : 0.0);
    }
  }
};

// ---------------------------------------------------------------------------
// Timing: warm-up, then fenced samples; the median is the case's time.
struct Timing {
  double median = 0;
  double min = 0;
  double host = 0;  // median time until the call returned (before the fence): host-side cost
  int samples = 0;
  double device = 0;  // median GPU-side duration of the call (device_time; 0 if not measured)
};

template <class Call>
Timing time_calls(const Settings& s, const Call& call) {
  Exec space;
  Kokkos::Timer warm;
  for (int w = 0; w < 2 || warm.seconds() < 0.02; ++w) {
    call();
    space.fence();
  }
  std::vector<double> t, h;
  double total = 0;
  while (static_cast<int>(t.size()) < s.min_samples ||
         (total < s.min_time && static_cast<int>(t.size()) < s.max_samples)) {
    space.fence();
    Kokkos::Timer timer;
    call();
    h.push_back(timer.seconds());
    space.fence();
    const double dt = timer.seconds();
    t.push_back(dt);
    total += dt;
  }
  Timing r;
  r.median = median(t);
  r.min = *std::min_element(t.begin(), t.end());
  r.host = median(h);
  r.samples = static_cast<int>(t.size());
  r.device = device_time(call, 21);
  return r;
}

// A copy of `bytes` bytes (bytes / 2 read, bytes / 2 written) timed like the cases: the median
// of 21 fenced calls after 3 warm-up ones, and its GPU-side duration (CUDA). median 0 when the
// copy buffers are smaller than bytes / 2.
Timing same_bytes_copy(double bytes) {
  Timing r;
  const std::size_t n = static_cast<std::size_t>(bytes / 2.0 / sizeof(float));
  if (n == 0 || n * sizeof(float) > static_cast<std::size_t>(g_machine.copy_bytes)) return r;
  if (g_copy_src.size() == 0) {
    const std::size_t cap = static_cast<std::size_t>(g_machine.copy_bytes) / sizeof(float);
    g_copy_src = decltype(g_copy_src)(
        Kokkos::view_alloc("gdn_bench::same_bytes_src", Kokkos::WithoutInitializing), cap);
    g_copy_dst = decltype(g_copy_dst)(
        Kokkos::view_alloc("gdn_bench::same_bytes_dst", Kokkos::WithoutInitializing), cap);
    fill_uniform(g_copy_src.data(), cap, -1.0f, 1.0f, 41);  // first touch
    fill_uniform(g_copy_dst.data(), cap, -1.0f, 1.0f, 42);
  }
  const auto range = std::make_pair(std::size_t(0), n);
  const auto src = Kokkos::subview(g_copy_src, range);
  const auto dst = Kokkos::subview(g_copy_dst, range);
  Exec space;
  const std::function<void()> call = [&] { Kokkos::deep_copy(space, dst, src); };
  r.median = fenced_median(call, r.host, 21, 3);
  r.device = device_time(call, 21);
  return r;
}

void report(benchmark::State& st, const Case& c, const Settings& s, const Timing& t) {
  const double bytes = c.min_bytes(), flops = c.flops();
  const double roof = std::max(bytes / g_machine.copy_bw, flops / g_machine.fp32_peak);
  const Timing copy = s.same_bytes_copy ? same_bytes_copy(bytes) : Timing{};
  if (copy.median > 0) {
    st.counters["copy_us"] = copy.median * 1e6;
    if (copy.device > 0) st.counters["copy_gpu_us"] = copy.device * 1e6;
    st.counters["copy_ratio"] = copy.median / t.median;
  }
  st.counters["time_us"] = t.median * 1e6;
  st.counters["min_us"] = t.min * 1e6;
  st.counters["host_us"] = t.host * 1e6;
  if (t.device > 0) st.counters["gpu_us"] = t.device * 1e6;
  st.counters["samples"] = t.samples;
  st.counters["bytes"] = bytes;
  st.counters["flops"] = flops;
  st.counters["GB/s"] = bytes / t.median * 1e-9;
  st.counters["TFLOP/s"] = flops / t.median * 1e-12;
  st.counters["bw_frac"] = bytes / t.median / g_machine.copy_bw;
  st.counters["roofline_frac"] = roof / t.median;
}

// ---------------------------------------------------------------------------
// The per-token inputs and outputs of fwd and verify: every row `window` tokens,
// activations of type ActT; both input forms over the same buffers (decay and
// beta hold a and b when the case has raw gates).
template <class ActT>
struct TokenBuffers {
  using Act = Kokkos::View<ActT**, Kokkos::LayoutRight, Mem>;
  Act qkv, decay, beta, out;  // [tokens, conv_dim], [tokens, nv] x 2, [tokens, value_dim]
  Kokkos::View<float*, Mem> A_log, dt_bias;  // [nv]
  Index offsets, slots;                      // [B+1], [B]
#if GDN_BENCH_ENGINE_INPUTS
  gdn::TokenInputs<Mem, ActT> in;
  gdn::GateInputs<Mem, ActT> gates;
#else
  gdn::TokenInputs<Mem> in;  // float activations only (ActT = float)
#endif

  explicit TokenBuffers(const Case& c) {
    const gdn::HeadConfig cfg = c.cfg();
    const std::size_t tokens = std::size_t(c.batch) * c.window;
    const auto no_init = [](const std::string& label) {
      return Kokkos::view_alloc(label, Kokkos::WithoutInitializing);
    };
    qkv = Act(no_init("gdn_bench::qkv"), tokens, cfg.conv_dim());
    decay = Act(no_init("gdn_bench::decay"), tokens, cfg.num_value_heads);
    beta = Act(no_init("gdn_bench::beta"), tokens, cfg.num_value_heads);
    out = Act(no_init("gdn_bench::out"), tokens, cfg.value_dim());
    A_log = Kokkos::View<float*, Mem>(no_init("gdn_bench::A_log"), cfg.num_value_heads);
    dt_bias = Kokkos::View<float*, Mem>(no_init("gdn_bench::dt_bias"), cfg.num_value_heads);
    fill_uniform(qkv.data(), qkv.size(), -1.0f, 1.0f, 11);
    if (c.raw_gates) {
      fill_uniform(decay.data(), decay.size(), -2.0f, 1.0f, 12);
      fill_uniform(beta.data(), beta.size(), -3.0f, 3.0f, 13);
    } else {
      fill_uniform(decay.data(), decay.size(), 0.8f, 1.0f, 12);
      fill_uniform(beta.data(), beta.size(), 0.05f, 0.95f, 13);
    }
    fill_uniform(A_log.data(), A_log.size(), -2.0f, 0.0f, 15);
    fill_uniform(dt_bias.data(), dt_bias.size(), -0.5f, 0.5f, 16);
    fill_uniform(out.data(), out.size(), -1.0f, 1.0f, 14);  // first touch
    std::vector<std::uint32_t> off(c.batch + 1), sl(c.batch);
    for (int b = 0; b <= c.batch; ++b) off[b] = static_cast<std::uint32_t>(b * c.window);
    for (int b = 0; b < c.batch; ++b) sl[b] = static_cast<std::uint32_t>(b);
    offsets = make_index(off);
    slots = make_index(sl);
    in = {qkv, decay, beta, offsets};
#if GDN_BENCH_ENGINE_INPUTS
    gates = {qkv, decay, beta, A_log, dt_bias, offsets};
#endif
  }
};

template <class StateT>
Pool<StateT> make_state(std::size_t rows, int dim) {
  Pool<StateT> s(Kokkos::view_alloc("gdn_bench::state", Kokkos::WithoutInitializing), rows,
                 kNumValueHeads, dim, dim);
  fill_uniform(s.data(), s.size(), -0.5f, 0.5f, 21);
  return s;
}

std::string non_finite_message(long bad, const char* what) {
  return std::to_string(bad) + " non-finite values in " + what + " after timing";
}

template <class StateT, class ActT>
void run_recurrence(benchmark::State& st, const Case& c, const Settings& s) {
  const gdn::HeadConfig cfg = c.cfg();
  TokenBuffers<ActT> tok(c);
  Pool<StateT> state = make_state<StateT>(c.batch, c.dim);  // [B, nv, Dk, Dv]
  Pool<float> ring;                                         // [B, nk, RING_LEN = T, record_stride]
  Index ring_slots;                                         // [B]
  if (c.kernel == Kernel::Verify) {
    ring = Pool<float>("gdn_bench::ring", c.batch, kNumKeyHeads, c.window, c.record_stride());
    ring_slots = tok.slots;
  }
  Exec space;
  space.fence();
  Timing t;
  const auto time_with = [&](const auto& in) {
#if GDN_BENCH_WORKSPACE
    if (c.kernel == Kernel::Prefill && !c.fused) {
      const gdn::Workspace<Mem> ws("gdn_bench::workspace", cfg, tok.out.extent(0), c.batch);
      return time_calls(
          s, [&] { gdn::recurrence_fwd(space, cfg, in, tok.slots, state, tok.out, ws); });
    }
#endif
#if GDN_BENCH_PREFILL_TC
    if (c.kernel == Kernel::PrefillTC) {
      const gdn::PrefillWorkspace<Mem> ws(
          "gdn_bench::prefill_workspace",
          gdn::prefill_workspace_bytes(cfg, tok.out.extent(0), c.batch));
      const gdn::PrefillPrecision prec =
          c.tc_bf16 ? gdn::PrefillPrecision::bf16 : gdn::PrefillPrecision::tf32x3;
      return time_calls(
          s, [&] { gdn::recurrence_prefill(space, cfg, in, tok.slots, state, tok.out, ws, prec); });
    }
#endif
    if (c.kernel == Kernel::Fwd || c.kernel == Kernel::Prefill) {
      return time_calls(s, [&] { gdn::recurrence_fwd(space, cfg, in, tok.slots, state, tok.out); });
    }
    return time_calls(s, [&] {
      gdn::recurrence_verify_ring(space, cfg, in, tok.slots, state, tok.out, ring_slots, ring);
    });
  };
  for (auto _ : st) {
#if GDN_BENCH_ENGINE_INPUTS
    t = c.raw_gates ? time_with(tok.gates) : time_with(tok.in);
#else
    t = time_with(tok.in);
#endif
    st.SetIterationTime(t.median);
  }
  report(st, c, s, t);
  long bad = count_non_finite(tok.out.data(), tok.out.size());
  if (bad) st.SkipWithError(non_finite_message(bad, "out").c_str());
  bad = count_non_finite(state.data(), state.size());
  if (bad) st.SkipWithError(non_finite_message(bad, "state").c_str());
  if (c.kernel == Kernel::Verify && (bad = count_non_finite(ring.data(), ring.size())) != 0)
    st.SkipWithError(non_finite_message(bad, "ring").c_str());
}

template <class StateT>
void run_fold(benchmark::State& st, const Case& c, const Settings& s) {
  const gdn::HeadConfig cfg = c.cfg();
  const std::size_t rows = std::size_t(c.layers) * c.batch;
  Pool<StateT> state = make_state<StateT>(rows, c.dim);  // [L*B, nv, Dk, Dv]
  Pool<float> ring(Kokkos::view_alloc("gdn_bench::ring", Kokkos::WithoutInitializing), rows,
                   kNumKeyHeads, c.window,
                   c.record_stride());  // [L*B, nk, RING_LEN = T, record_stride]
  const int g = cfg.group_size();
  Kokkos::parallel_for("gdn_bench::fill_records",
                       BigRange(0, static_cast<std::int64_t>(ring.size())),
                       FillRecords{ring.data(), static_cast<std::int64_t>(c.record_stride()), c.dim,
                                   c.dim + g * c.dim, 31});
  const Table state_rows = make_table(c.layers, c.batch);  // [L, B]
  const Table ring_rows = make_table(c.layers, c.batch);   // [L, B]
  const Index accepted =
      make_index(std::vector<std::uint32_t>(c.batch, static_cast<std::uint32_t>(c.window)));
  // The conv pools (conv_pools): [L*B, conv_dim, W-1] and [L*B, RING_LEN = T, conv_dim].
  using ConvPool = Kokkos::View<StateT***, Kokkos::LayoutRight, Mem>;
  const std::size_t conv_rows = c.conv_pools ? rows : 0;
  ConvPool conv_state(Kokkos::view_alloc("gdn_bench::conv_state", Kokkos::WithoutInitializing),
                      conv_rows, cfg.conv_dim(), kConvWidth - 1);
  ConvPool conv_ring(Kokkos::view_alloc("gdn_bench::conv_ring", Kokkos::WithoutInitializing),
                     conv_rows, c.window, cfg.conv_dim());
  fill_uniform(conv_state.data(), conv_state.size(), -1.0f, 1.0f, 51);
  fill_uniform(conv_ring.data(), conv_ring.size(), -1.0f, 1.0f, 52);
#if GDN_BENCH_ENGINE_INPUTS
  const gdn::ConvFold<Mem, StateT> conv{conv_state, conv_ring};
#endif
  Exec space;
  space.fence();
  Timing t;
  for (auto _ : st) {
    t = time_calls(s, [&] {
#if GDN_BENCH_ENGINE_INPUTS
      if (c.conv_pools) {
        gdn::state_fold(space, cfg, state_rows, state, ring_rows, ring, accepted, conv);
        return;
      }
#endif
      gdn::state_fold(space, cfg, state_rows, state, ring_rows, ring, accepted);
    });
    st.SetIterationTime(t.median);
  }
  report(st, c, s, t);
  long bad = count_non_finite(state.data(), state.size());
  if (bad) st.SkipWithError(non_finite_message(bad, "state").c_str());
  if ((bad = count_non_finite(conv_state.data(), conv_state.size())) != 0)
    st.SkipWithError(non_finite_message(bad, "conv state").c_str());
}

// One layer's speculative step, layer l = the call count modulo L, over pools of L layers
// (rows l * B + b); acceptances 1 .. T drawn once, 16 vectors taken in turn.
template <class StateT>
void run_step(benchmark::State& st, const Case& c, const Settings& s) {
  const gdn::HeadConfig cfg = c.cfg();
  const int L = c.layers, B = c.batch, T = c.window;
  TokenBuffers<float> tok(c);
  const std::size_t rows = std::size_t(L) * B;
  Pool<StateT> state = make_state<StateT>(rows, c.dim);  // [L*B, nv, Dk, Dv]
  const int positions = c.lazy ? 3 * T : T;              // the history's capacity, or RING_LEN
  Pool<float> ring("gdn_bench::ring", rows, kNumKeyHeads, positions, c.record_stride());
  Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Mem> ledger(
      "gdn_bench::ledger", c.lazy ? rows : 0, (positions + 31) / 32 + 1);
  // Layer l's rows l * B + b (state and ring), as a [B] index and a [1, B] table of their own:
  // views of the default layout, which every gdn release accepts (a subview of one [L, B]
  // table is strided on CUDA).
  std::vector<Index> layer_rows;
  std::vector<Table> layer_tables;
  for (int l = 0; l < L; ++l) {
    std::vector<std::uint32_t> v(B);
    for (int b = 0; b < B; ++b) v[b] = static_cast<std::uint32_t>(l * B + b);
    layer_rows.push_back(make_index(v));
    layer_tables.push_back(make_table(1, B, l));
  }
  std::vector<Index> accepted;
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int k = 0; k < 16; ++k) {
    std::vector<std::uint32_t> n(B);
    for (int b = 0; b < B; ++b) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      n[b] = 1 + static_cast<std::uint32_t>(x % std::uint64_t(T));
    }
    accepted.push_back(make_index(n));
  }
  Exec space;
  space.fence();
  long long call = 0;
  Timing t;
  for (auto _ : st) {
    t = time_calls(s, [&] {
      const int l = static_cast<int>(call % L);
      const Index& acc = accepted[static_cast<std::size_t>(call++ % 16)];
      const Index& rows_l = layer_rows[static_cast<std::size_t>(l)];
      const Table& table_l = layer_tables[static_cast<std::size_t>(l)];
#if GDN_BENCH_LAZY
      if (c.lazy) {
        const gdn::LazyRing<Mem, float> lazy{ring, ledger};
        gdn::recurrence_verify_lazy(space, cfg, tok.in, rows_l, state, tok.out, rows_l, lazy);
        gdn::lazy_accept(space, table_l, lazy, acc);
        return;
      }
#endif
      gdn::recurrence_verify_ring(space, cfg, tok.in, rows_l, state, tok.out, rows_l, ring);
      gdn::state_fold(space, cfg, table_l, state, table_l, ring, acc);
    });
    st.SetIterationTime(t.median);
  }
  report(st, c, s, t);
  long bad = count_non_finite(state.data(), state.size());
  if (bad) st.SkipWithError(non_finite_message(bad, "state").c_str());
  if ((bad = count_non_finite(tok.out.data(), tok.out.size())) != 0)
    st.SkipWithError(non_finite_message(bad, "out").c_str());
}

template <class StateT>
void run_recurrence_act(benchmark::State& st, const Case& c, const Settings& s) {
#if GDN_BENCH_ENGINE_INPUTS
  c.bf16_act ? run_recurrence<StateT, gdn::bf16>(st, c, s)
             : run_recurrence<StateT, float>(st, c, s);
#else
  run_recurrence<StateT, float>(st, c, s);
#endif
}

#if GDN_BENCH_ENGINE_INPUTS

// The conv cases: activations and out of type A, W = 4 with bias.
template <class A>
void run_conv(benchmark::State& st, const Case& c, const Settings& s) {
  using Act = Kokkos::View<A**, Kokkos::LayoutRight, Mem>;
  using ConvPool = Kokkos::View<A***, Kokkos::LayoutRight, Mem>;
  const gdn::HeadConfig cfg = c.cfg();
  const std::size_t C = cfg.conv_dim(), K = kConvWidth - 1;
  const std::size_t tokens = std::size_t(c.batch) * c.window;
  const std::size_t rows = std::size_t(c.layers) * c.batch;
  const auto no_init = [](const std::string& label) {
    return Kokkos::view_alloc(label, Kokkos::WithoutInitializing);
  };
  ConvPool state(no_init("gdn_bench::conv_state"), rows, C, K);  // [L*B, conv_dim, W-1]
  fill_uniform(state.data(), state.size(), -1.0f, 1.0f, 51);
  ConvPool ring(no_init("gdn_bench::conv_ring"), c.kernel == Kernel::ConvVerify ? rows : 0,
                c.window, C);  // [B, RING_LEN = T, conv_dim]
  fill_uniform(ring.data(), ring.size(), -1.0f, 1.0f, 52);
  Exec space;
  Timing t;
  Kokkos::View<A**, Kokkos::LayoutRight, Mem> out;
  Act qkv(no_init("gdn_bench::conv_qkv"), tokens, C);  // [tokens, conv_dim]
  fill_uniform(qkv.data(), qkv.size(), -1.0f, 1.0f, 53);
  out = decltype(out)(no_init("gdn_bench::conv_out"), tokens, C);   // [tokens, conv_dim]
  fill_uniform(out.data(), out.size(), -1.0f, 1.0f, 54);            // first touch
  Matrix weight(no_init("gdn_bench::conv_weight"), C, kConvWidth);  // [conv_dim, W]
  fill_uniform(weight.data(), weight.size(), -0.5f, 0.5f, 55);
  Kokkos::View<float*, Mem> bias(no_init("gdn_bench::conv_bias"), C);  // [conv_dim]
  fill_uniform(bias.data(), bias.size(), -0.2f, 0.2f, 56);
  std::vector<std::uint32_t> off(c.batch + 1), sl(c.batch);
  for (int b = 0; b <= c.batch; ++b) off[b] = static_cast<std::uint32_t>(b * c.window);
  for (int b = 0; b < c.batch; ++b) sl[b] = static_cast<std::uint32_t>(b);
  const Index offsets = make_index(off), slots = make_index(sl);
  gdn::ConvInputs<Mem, A> in;
  in.qkv = qkv;
  in.weight = weight;
  in.bias = bias;
  in.row_offsets = offsets;
  space.fence();
  for (auto _ : st) {
    if (c.kernel == Kernel::ConvVerify) {
      t = time_calls(
          s, [&] { gdn::conv1d_verify_ring(space, cfg, in, slots, state, out, slots, ring); });
    } else {
      t = time_calls(s, [&] { gdn::conv1d_fwd(space, cfg, in, slots, state, out); });
    }
    st.SetIterationTime(t.median);
  }
  report(st, c, s, t);
  long bad = count_non_finite(state.data(), state.size());
  if (bad) st.SkipWithError(non_finite_message(bad, "conv state").c_str());
  if (out.size() && (bad = count_non_finite(out.data(), out.size())) != 0)
    st.SkipWithError(non_finite_message(bad, "out").c_str());
}

#endif  // GDN_BENCH_ENGINE_INPUTS

void run_case(benchmark::State& st, const Case& c, const Settings& s) {
#if GDN_BENCH_ENGINE_INPUTS
  if (c.conv()) {
    c.bf16_state ? run_conv<gdn::bf16>(st, c, s) : run_conv<float>(st, c, s);
    return;
  }
#endif
  if (c.kernel == Kernel::Step) {
    c.bf16_state ? run_step<gdn::bf16>(st, c, s) : run_step<float>(st, c, s);
    return;
  }
  const bool fold = c.kernel == Kernel::Fold;
  if (c.bf16_state) {
    fold ? run_fold<gdn::bf16>(st, c, s) : run_recurrence_act<gdn::bf16>(st, c, s);
  } else {
    fold ? run_fold<float>(st, c, s) : run_recurrence_act<float>(st, c, s);
  }
}

// ---------------------------------------------------------------------------
void register_cases(const Settings& s) {
  int skipped = 0;
  auto add = [&](const Case& c) {
    if (!GDN_BENCH_ENGINE_INPUTS && (c.bf16_act || c.raw_gates || c.conv() || c.conv_pools)) {
      return;  // not in this gdn (the header's note on older sources)
    }
    if (!GDN_BENCH_LAZY && c.lazy) return;  // not in this gdn
    if (c.footprint() > s.max_bytes) {
      std::printf("gdn_bench: skipped %s (%.1f GiB of buffers > GDN_BENCH_MAX_GIB)\n",
                  c.name().c_str(), c.footprint() / double(1ull << 30));
      ++skipped;
      return;
    }
    benchmark::RegisterBenchmark(c.name().c_str(),
                                 [c, s](benchmark::State& st) { run_case(st, c, s); })
        ->Iterations(1)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  };
  const int batches[] = {1, 8, 32, 128, 256, 512};
  const int windows[] = {1, 2, 4, 8, 16};
  struct Variant {
    Kernel kernel;
    int layers;
  };
  const Variant variants[] = {
      {Kernel::Fwd, 1}, {Kernel::Verify, 1}, {Kernel::Fold, 1}, {Kernel::Fold, kModelLayers}};
  for (const Variant& v : variants)
    for (int dim : {128, 64})
      for (bool bf16_state : {false, true})
        for (int batch : batches)
          for (int window : windows) {
            if (batch > s.max_batch) continue;
            Case c;
            c.kernel = v.kernel;
            c.layers = v.layers;
            c.dim = dim;
            c.bf16_state = bf16_state;
            c.batch = batch;
            c.window = window;
            c.record_align = s.record_align;
            add(c);
          }
  // Prefill: long prompts, D = 128 (Qwen3-Next's layer).
  const int prompts[][2] = {{1, 1024}, {1, 4096}, {1, 8192}, {4, 4096}, {16, 4096}};
  for (bool bf16_state : {false, true})
    for (const auto& bl : prompts) {
      Case c;
      c.kernel = Kernel::Prefill;
      c.dim = 128;
      c.bf16_state = bf16_state;
      c.batch = bl[0];
      c.window = bl[1];
      add(c);
      if (GDN_BENCH_WORKSPACE && c.batch == 1 && c.window <= 4096 && !bf16_state) {
        c.fused = true;  // the same prompt without a workspace
        add(c);
      }
    }
  // The chunked prefill, both precisions, over the same prompts; bf16 products also on bf16
  // activations (fla's inputs).
  if (GDN_BENCH_PREFILL_TC)
    for (bool tc_bf16 : {true, false})
      for (bool bf16_act : {false, true})
        for (bool bf16_state : {false, true})
          for (const auto& bl : prompts) {
            if (bf16_act && !tc_bf16) continue;
            Case c;
            c.kernel = Kernel::PrefillTC;
            c.dim = 128;
            c.bf16_state = bf16_state;
            c.batch = bl[0];
            c.window = bl[1];
            c.tc_bf16 = tc_bf16;
            c.bf16_act = bf16_act;
            add(c);
          }
  // Input variants: bf16 activations, raw gates, both (D = 128, bf16 state: the engines' case).
  const bool inputs[][2] = {{true, false}, {false, true}, {true, true}};  // {bf16_act, raw_gates}
  for (const auto& io : inputs) {
    for (Kernel kernel : {Kernel::Fwd, Kernel::Verify})
      for (int batch : batches)
        for (int window : {1, 4, 16}) {
          if (batch > s.max_batch) continue;
          Case c;
          c.kernel = kernel;
          c.bf16_state = true;
          c.batch = batch;
          c.window = window;
          c.record_align = s.record_align;
          c.bf16_act = io[0];
          c.raw_gates = io[1];
          add(c);
        }
    for (int p : {0, 3}) {
      Case c;
      c.kernel = Kernel::Prefill;
      c.bf16_state = true;
      c.batch = prompts[p][0];
      c.window = prompts[p][1];
      c.bf16_act = io[0];
      c.raw_gates = io[1];
      add(c);
    }
  }
  // The conv1d in front of the recurrence: D = 128 (conv_dim 8192), W = 4.
  for (Kernel kernel : {Kernel::ConvFwd, Kernel::ConvVerify})
    for (bool bf16_act : {false, true})
      for (int batch : batches)
        for (int window : {1, 4, 16}) {
          if (batch > s.max_batch) continue;
          Case c;
          c.kernel = kernel;
          c.bf16_state = bf16_act;
          c.batch = batch;
          c.window = window;
          add(c);
        }
  // The fold with the conv pools (of the state's type), D = 128: against the fold cases above.
  for (int layers : {1, kModelLayers})
    for (bool bf16_state : {false, true})
      for (int batch : batches)
        for (int window : {1, 4, 16}) {
          if (batch > s.max_batch) continue;
          Case c;
          c.kernel = Kernel::Fold;
          c.layers = layers;
          c.bf16_state = bf16_state;
          c.batch = batch;
          c.window = window;
          c.record_align = s.record_align;
          c.conv_pools = true;
          add(c);
        }
  for (bool bf16_act : {false, true})
    for (const auto& bl : prompts) {
      Case c;
      c.kernel = Kernel::ConvPrefill;
      c.bf16_state = bf16_act;
      c.batch = bl[0];
      c.window = bl[1];
      add(c);
    }
  // One layer's speculative step, lazy and eager, over 36 layers' pools (D = 128, T = 4).
  for (bool lazy : {true, false})
    for (bool bf16_state : {false, true})
      for (int batch : batches) {
        if (batch > s.max_batch) continue;
        Case c;
        c.kernel = Kernel::Step;
        c.layers = kModelLayers;
        c.bf16_state = bf16_state;
        c.batch = batch;
        c.window = 4;
        c.record_align = s.record_align;
        c.lazy = lazy;
        add(c);
      }
  if (skipped) std::printf("gdn_bench: %d cases skipped for memory\n", skipped);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace
}  // namespace gdn_bench

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = 0;
  {
    using namespace gdn_bench;
    // Kokkos 3 leaves its --kokkos-* arguments in argv; Google Benchmark would reject them.
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]).compare(0, 9, "--kokkos-") != 0) argv[kept++] = argv[i];
    }
    argc = kept;
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
      rc = 1;
    } else {
      gdn::set_index_checking(false);
      g_machine = measure_machine();
      const Settings s = settings_for(g_machine);
      const Machine& m = g_machine;
      benchmark::AddCustomContext("backend", m.backend);
      benchmark::AddCustomContext("device", m.device);
      benchmark::AddCustomContext("concurrency", std::to_string(m.concurrency));
      benchmark::AddCustomContext("copy_bw", fmt("%.6g", m.copy_bw));
      benchmark::AddCustomContext("copy_buffer_bytes", fmt("%.0f", m.copy_bytes));
      benchmark::AddCustomContext("fp32_peak", fmt("%.6g", m.fp32_peak));
      benchmark::AddCustomContext("fp32_peak_method", m.fp32_peak_method);
      benchmark::AddCustomContext("fp32_peak_measured", fmt("%.6g", m.fp32_peak_measured));
      benchmark::AddCustomContext("launch_floor_us", fmt("%.3f", m.launch_floor * 1e6));
      benchmark::AddCustomContext("launch_host_us", fmt("%.3f", m.launch_host * 1e6));
      if (m.cuda_launch_floor > 0) {
        benchmark::AddCustomContext("cuda_launch_floor_us", fmt("%.3f", m.cuda_launch_floor * 1e6));
        benchmark::AddCustomContext("cuda_launch_host_us", fmt("%.3f", m.cuda_launch_host * 1e6));
      }
      if (m.launch_floor_device > 0) {
        benchmark::AddCustomContext("launch_floor_device_us",
                                    fmt("%.3f", m.launch_floor_device * 1e6));
      }
      benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION / 10000) + "." +
                                                        std::to_string(KOKKOS_VERSION / 100 % 100) +
                                                        "." + std::to_string(KOKKOS_VERSION % 100));
      benchmark::AddCustomContext("gdn_version", GDN_VERSION_STRING);
      benchmark::AddCustomContext("max_batch", std::to_string(s.max_batch));
      benchmark::AddCustomContext("min_time_s", fmt("%g", s.min_time));
      benchmark::AddCustomContext("timing",
                                  "median of fenced calls (warm-up first); see perf/bench_gdn.cpp");
      std::printf("gdn_bench: backend %s (concurrency %d), device %s\n", m.backend.c_str(),
                  m.concurrency, m.device.c_str());
      std::printf("gdn_bench: copy_bw %.1f GB/s (deep_copy of %.0f MiB, read + write, median)\n",
                  m.copy_bw * 1e-9, m.copy_bytes / double(1 << 20));
      std::printf("gdn_bench: fp32_peak %.1f GFLOP/s (%s); fma microkernel %.1f GFLOP/s\n",
                  m.fp32_peak * 1e-9, m.fp32_peak_method.c_str(), m.fp32_peak_measured * 1e-9);
      std::printf(
          "gdn_bench: launch floor %.2f us (fenced empty Kokkos kernel, median; %.2f us until the "
          "launch returned)",
          m.launch_floor * 1e6, m.launch_host * 1e6);
      if (m.cuda_launch_floor > 0) {
        std::printf("; %.2f us without Kokkos (<<<1, 1>>>; %.2f us until it returned)",
                    m.cuda_launch_floor * 1e6, m.cuda_launch_host * 1e6);
      }
      if (m.launch_floor_device > 0) {
        std::printf("; the empty kernel's GPU-side duration %.2f us", m.launch_floor_device * 1e6);
      }
      std::printf("\n");
      std::fflush(stdout);
      register_cases(s);
      if (benchmark::RunSpecifiedBenchmarks() > 0) {
        // A drift check: the fractions above use the copy_bw measured before the cases.
        std::printf("gdn_bench: copy_bw after the cases %.1f GB/s (before: %.1f GB/s)\n",
                    measure_copy_bw(m.host) * 1e-9, m.copy_bw * 1e-9);
      }
    }
    benchmark::Shutdown();
    g_copy_src = {};
    g_copy_dst = {};
  }
  Kokkos::finalize();
  return rc;
}
