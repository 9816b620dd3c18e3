#ifndef GDN_IMPL_MAPPING_HPP
#define GDN_IMPL_MAPPING_HPP

/// \file mapping.hpp
/// \brief The backend seam: how a kernel's work is laid onto one execution space.
///
/// The kernels (recurrence_kernel.hpp, fold_kernel.hpp) are written once for
/// every backend. What differs between a GPU and a CPU is collected here and
/// only here:
///   - the team shape: how many hardware lanes split the rows of one state
///     column (`row_lanes`), how many columns each lane owns
///     (`cols_per_lane`), how many lane groups a team has, and how the groups
///     sit in a Kokkos vector (`vector_length`, `lane_stride`);
///   - how many independent partial sums one lane keeps (instruction-level
///     parallelism on a CPU core);
///   - persistent teams and state prefetch (CUDA), and how many teams to
///     launch (`launch_teams`);
///   - the thread index, the sum across the lanes of one group, wide
///     (16-byte) loads and stores, and asynchronous copies into team scratch
///     (`stage_async`: cp.async on CUDA, a plain copy elsewhere).
/// A new backend adds a specialisation here and nothing else.
///
/// Reduction order: a lane sums its own rows in a fixed order, then the lane
/// group is combined by xor shuffles (a reduce-scatter for the token loop's
/// column sums; the norms: a butterfly over a quad of lanes, quad_sum, or
/// over a lane group). Floating-point addition is commutative, so every lane
/// holding a result holds the same bits. The order depends only on the
/// mapping, which forward and verify share.

#include <gdn/bf16.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

#if defined(__CUDA_ARCH__)
#define GDN_UNROLL _Pragma("unroll")
#define GDN_NO_UNROLL _Pragma("unroll 1")
#else
#define GDN_UNROLL
#define GDN_NO_UNROLL
#endif
// GDN_SIMD: on the host, vectorise this (column) loop. Without it GCC may
// unroll a short column loop completely and vectorise the loop around it
// with gathers instead. Element-wise loops only: it reorders no arithmetic.
#if defined(__CUDACC__) || !defined(_OPENMP)
#define GDN_SIMD
#else
#define GDN_SIMD _Pragma("omp simd")
#endif
// GDN_HOST_UNROLL: on the host (g++/clang++, not through nvcc), unroll a short
// loop completely, so that small arrays indexed by it stay in registers.
#if defined(__CUDACC__)
#define GDN_HOST_UNROLL
#elif defined(__clang__)
#define GDN_HOST_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define GDN_HOST_UNROLL _Pragma("GCC unroll 16")
#else
#define GDN_HOST_UNROLL
#endif

namespace gdn {
namespace Impl {

// Tuning knobs of the host mapping (compile-time; defaults measured on a
// 2-core AMD EPYC (Zen 5) VM, see docs/perf/history.md).
#ifndef GDN_HOST_COLS_PER_LANE
#define GDN_HOST_COLS_PER_LANE 64
#endif
#ifndef GDN_HOST_ROW_ACC
#define GDN_HOST_ROW_ACC 4
#endif
#ifndef GDN_HOST_COL_BLOCK
#define GDN_HOST_COL_BLOCK 16
#endif
#ifndef GDN_HOST_PERSISTENT
#define GDN_HOST_PERSISTENT 0
#endif
#ifndef GDN_HOST_PREFETCH
#define GDN_HOST_PREFETCH 1
#endif
#ifndef GDN_HOST_FOLD_COLS
#define GDN_HOST_FOLD_COLS 32
#endif
#ifndef GDN_HOST_FOLD_ROWS
#define GDN_HOST_FOLD_ROWS 64
#endif

/// Host mapping (Serial, OpenMP, and any space without a specialisation):
/// one thread per team owns a tile of whole columns (64 columns x Dk rows:
/// 32 KiB at Dk = 128, L1-resident); the loops over a tile's columns are what
/// the compiler vectorises.
template <class ExecSpace, class StateT = float>
struct RecurrenceMapping {
  /// lanes splitting one column's rows (at head dim `dk`)
  static constexpr int row_lanes(int /*dk*/) { return 1; }
  static constexpr int cols_per_lane = GDN_HOST_COLS_PER_LANE;  ///< columns one lane owns
  static constexpr int team_threads = 1;                        ///< lane groups per team
  /// Columns per lane and lane groups per team of one kernel (the CUDA
  /// mapping's verify may differ from the forward there); the host: the above.
  static constexpr int lane_cols(int /*dk*/, bool /*verify*/, bool /*short_rows*/ = false) {
    return cols_per_lane;
  }
  static constexpr int lane_groups(int /*dk*/, bool /*verify*/, bool /*short_rows*/ = false) {
    return team_threads;
  }
  static constexpr int vector_length = 1;  ///< Kokkos vector length (threads of one vector)
  /// distance between the lanes of one group in a vector
  static constexpr int lane_stride(int /*dk*/) { return 1; }
  /// independent partial sums per column (ILP)
  static constexpr int row_accumulators = GDN_HOST_ROW_ACC;
  /// columns summed together (one 512-bit vector)
  static constexpr int col_block = GDN_HOST_COL_BLOCK;
  static constexpr int norm_accumulators = 16;  ///< partial sums for the q/k norms
  /// GPU only (see the CUDA mapping): each warp the norms of the tokens it staged.
  static constexpr bool staged_norms(int /*dk*/) { return false; }
  /// tokens staged per team barrier (forward or verify)
  static constexpr int chunk_tokens(bool /*verify*/) { return 16; }
  /// Launch bound for head dimension `dk`, forward or verify (GPU only).
  static constexpr int min_teams_per_sm(int /*dk*/, bool /*verify*/, bool /*short_rows*/ = false) {
    return 1;
  }
  /// Persistent teams per thread (launch_teams; 0: one team per work item,
  /// scheduled dynamically, which measured faster: a thread then reads
  /// neighbouring tiles of the state).
  static constexpr int persistent_teams_per_sm(int /*dk*/, bool /*verify*/,
                                               bool /*short_rows*/ = false) {
    return GDN_HOST_PERSISTENT;
  }
  /// GPU only (see the CUDA mapping): a stage's norms computed by every warp, not once per team.
  static constexpr bool warp_norms(int /*dk*/, bool /*verify*/, bool /*short_rows*/ = false) {
    return false;
  }
  /// GPU only (see the CUDA mapping): lane groups sum through shared memory.
  static constexpr bool smem_sums(int /*dk*/, bool /*verify*/, bool /*short_rows*/ = false) {
    return false;
  }
  /// GPU only (see the CUDA mapping): runs of work items share their staged k and q.
  static constexpr int kq_run_max(int /*dk*/, bool /*verify*/, bool /*short_rows*/ = false) {
    return 1;
  }
  static constexpr int kq_run_slack_pct = 0;       ///< GPU only
  static constexpr int kq_run_balance_rounds = 0;  ///< GPU only
  /// Verify with RING_LEN <= this runs its own kernel (0: none; GPU only).
  static constexpr int short_window_max(bool /*verify*/) { return 0; }
  /// Whether forward / verify at head dim `dk` has a short-row kernel (GPU only).
  static constexpr bool has_short_kernel(int /*dk*/, bool /*verify*/) { return false; }
  /// copy the next item's state into scratch during this one (forward or
  /// verify; `short_rows`: the short-row kernel, has_short_kernel)
  static constexpr bool prefetch_state(bool /*verify*/, bool /*short_rows*/ = false) {
    return false;
  }
  /// GPU only (see the CUDA mapping).
  static constexpr bool shared_state_copy(int /*dk*/, bool /*verify*/) { return false; }
  /// GPU only (see the CUDA mapping).
  static constexpr bool prefetch_l2_next(bool /*verify*/, bool /*short_rows*/ = false) {
    return false;
  }
  /// Prefetch the next item's state into the cache (prefetch_line) during the
  /// last stage of the current one, spread over its sweeps (token_steps_fused).
  static constexpr bool prefetch_hint = GDN_HOST_PREFETCH != 0;
  /// GPU only (see the CUDA mapping).
  static constexpr int prefetch_l2_max_len(bool /*verify*/, bool /*short_rows*/ = false) {
    return 0;
  }
  using schedule = Kokkos::Schedule<Kokkos::Dynamic>;
};

/// Host fold mapping: one thread per team, 32-column items (16-column items
/// measured 2x slower with 512-bit vectors: GCC vectorised the wrong loop).
template <class ExecSpace, class StateT>
struct FoldMapping {
  /// consecutive state columns per work item
  static constexpr int cols_per_item = GDN_HOST_FOLD_COLS;
  static constexpr int team_threads = 1;
  static constexpr int rows_per_team = GDN_HOST_FOLD_ROWS;  ///< state rows covered by one team
  static constexpr int chunk_records = 16;                  ///< records staged per team barrier
  static constexpr bool records_outer = false;              ///< item loop outside the record loop
  /// With the item loop outside: items that take each record together (so
  /// many independent update chains). 2-core EPYC, medians of 3, fold
  /// L = 1 T = 8 D128 float B = 32, pairs measured in one run: 1 -> 8 items
  /// 7604 -> 6215 us, 8 -> 16 6291 -> 5847 us, 16 -> 32 5692 -> 5729 us;
  /// T = 1 within 3 %.
  static constexpr int apply_block = 16;
  /// The CUDA mapping's order of copies and barriers (fold_kernel.hpp) is
  /// not used here: one-thread teams have no barrier to spare, and with it
  /// the host fold measured 1 to 5 % slower at B = 1 and 8 (2-core EPYC,
  /// D64, L = 1, four runs of each build alternated).
  static constexpr bool lean_barriers = false;
  static constexpr int min_teams_per_sm(int /*dk*/) { return 1; }
  /// one team per work item (launch_teams)
  static constexpr int persistent_teams_per_sm(int /*dk*/) { return 0; }
  /// copy the next item's state tile into scratch during this one
  static constexpr bool prefetch_state = false;
  using schedule = Kokkos::Schedule<Kokkos::Dynamic>;
};

#if defined(KOKKOS_ENABLE_CUDA)
// Tuning knobs of the CUDA mapping (compile-time; the defaults are the
// measured best on the H200, see docs/perf/history.md).
#ifndef GDN_CUDA_ROW_LANES
#define GDN_CUDA_ROW_LANES 8
#endif
#ifndef GDN_CUDA_ROW_LANES_D64
#define GDN_CUDA_ROW_LANES_D64 4
#endif
#ifndef GDN_CUDA_ROW_LANES_D64_BF16
#define GDN_CUDA_ROW_LANES_D64_BF16 4
#endif
#ifndef GDN_CUDA_VECTOR
#define GDN_CUDA_VECTOR 32
#endif
#ifndef GDN_CUDA_COLS_PER_LANE
#define GDN_CUDA_COLS_PER_LANE 4
#endif
#ifndef GDN_CUDA_LANE_GROUPS
#define GDN_CUDA_LANE_GROUPS 16
#endif
// Columns per lane at Dk = 128 of verify's main kernel, of verify's short-row
// kernel and of the forward's decode kernel (lane_cols; the forward's other
// kernel: GDN_CUDA_COLS_PER_LANE).
#ifndef GDN_CUDA_VERIFY_COLS_PER_LANE
#define GDN_CUDA_VERIFY_COLS_PER_LANE GDN_CUDA_COLS_PER_LANE
#endif
#ifndef GDN_CUDA_VERIFY_SHORT_COLS_PER_LANE
#define GDN_CUDA_VERIFY_SHORT_COLS_PER_LANE GDN_CUDA_COLS_PER_LANE
#endif
#ifndef GDN_CUDA_DECODE_COLS_PER_LANE
#define GDN_CUDA_DECODE_COLS_PER_LANE GDN_CUDA_COLS_PER_LANE
#endif
// Teams per SM at Dk = 128 (min_teams_per_sm). Measured against these on
// the H200 (same call, medians of 3, B = 128 to 512): a float state at 4
// (128 registers, 16 bytes of spills) verify T = 1 / 2 5.5 to 8.8 % slower,
// T = 4 / 8 0.8 to 2.0 % faster (the forward at B = 256: T = 1 / 2 8 to 9 %
// slower, T = 8 4 % faster); a bf16 state at 5 (96 registers, 60 to 124
// bytes of spills) verify 14 to 29 % slower, the forward at T >= 2 12 to
// 23 % (docs/performance.md, twenty-second session).
#ifndef GDN_CUDA_MIN_TEAMS
#define GDN_CUDA_MIN_TEAMS 3
#endif
#ifndef GDN_CUDA_MIN_TEAMS_BF16
#define GDN_CUDA_MIN_TEAMS_BF16 4
#endif
// At Dk = 64 the defaults follow the row lanes: 8 lanes, teams of 128
// threads (the mapping before 4 lanes); 4 lanes, teams of 64 threads.
#ifndef GDN_CUDA_MIN_TEAMS_D64
#define GDN_CUDA_MIN_TEAMS_D64 (GDN_CUDA_ROW_LANES_D64 >= 8 ? 3 : 6)
#endif
#ifndef GDN_CUDA_MIN_TEAMS_D64_BF16
#define GDN_CUDA_MIN_TEAMS_D64_BF16 (GDN_CUDA_ROW_LANES_D64_BF16 >= 8 ? 4 : 8)
#endif
#ifndef GDN_CUDA_MIN_TEAMS_VERIFY_D64
#define GDN_CUDA_MIN_TEAMS_VERIFY_D64 (GDN_CUDA_ROW_LANES_D64 >= 8 ? 5 : 6)
#endif
#ifndef GDN_CUDA_MIN_TEAMS_VERIFY_D64_BF16
#define GDN_CUDA_MIN_TEAMS_VERIFY_D64_BF16 (GDN_CUDA_ROW_LANES_D64_BF16 >= 8 ? 6 : 8)
#endif
#ifndef GDN_CUDA_WARP_NORMS
#define GDN_CUDA_WARP_NORMS 1
#endif
#ifndef GDN_CUDA_WARP_NORMS_BF16_VERIFY
#define GDN_CUDA_WARP_NORMS_BF16_VERIFY 1
#endif
#ifndef GDN_CUDA_STAGED_NORMS
#define GDN_CUDA_STAGED_NORMS 1
#endif
#ifndef GDN_CUDA_STAGED_NORMS_D64
#define GDN_CUDA_STAGED_NORMS_D64 0
#endif
#ifndef GDN_CUDA_STAGED_NORMS_D64_BF16
#define GDN_CUDA_STAGED_NORMS_D64_BF16 1
#endif
#ifndef GDN_CUDA_CHUNK_TOKENS
#define GDN_CUDA_CHUNK_TOKENS 4
#endif
#ifndef GDN_CUDA_CHUNK_TOKENS_VERIFY
#define GDN_CUDA_CHUNK_TOKENS_VERIFY 8
#endif
#ifndef GDN_CUDA_CHUNK_TOKENS_BF16
#define GDN_CUDA_CHUNK_TOKENS_BF16 8
#endif
#ifndef GDN_CUDA_PERSISTENT
#define GDN_CUDA_PERSISTENT 1
#endif
#ifndef GDN_CUDA_PREFETCH
#define GDN_CUDA_PREFETCH 1
#endif
#ifndef GDN_CUDA_PREFETCH_VERIFY
#define GDN_CUDA_PREFETCH_VERIFY 0
#endif
#ifndef GDN_CUDA_PREFETCH_VERIFY_BF16
#define GDN_CUDA_PREFETCH_VERIFY_BF16 1
#endif
#ifndef GDN_CUDA_PREFETCH_L2_NEXT
#define GDN_CUDA_PREFETCH_L2_NEXT 1
#endif
#ifndef GDN_CUDA_SMEM_SUMS
#define GDN_CUDA_SMEM_SUMS 1
#endif
#ifndef GDN_CUDA_KQ_RUN
#define GDN_CUDA_KQ_RUN 4
#endif
#ifndef GDN_CUDA_KQ_RUN_FWD
#define GDN_CUDA_KQ_RUN_FWD 1
#endif
#ifndef GDN_CUDA_KQ_RUN_D64_FLOAT
#define GDN_CUDA_KQ_RUN_D64_FLOAT 1
#endif
#ifndef GDN_CUDA_KQ_RUN_SLACK
#define GDN_CUDA_KQ_RUN_SLACK 10
#endif
#ifndef GDN_CUDA_KQ_RUN_BALANCE
#define GDN_CUDA_KQ_RUN_BALANCE 2
#endif
#ifndef GDN_CUDA_SHORT_WINDOW_BF16
#define GDN_CUDA_SHORT_WINDOW_BF16 2
#endif
#ifndef GDN_CUDA_MIN_TEAMS_BF16_DECODE
#define GDN_CUDA_MIN_TEAMS_BF16_DECODE 3
#endif
// The forward's decode-step kernel with a float state at Dk = 64 (4 row
// lanes; with 8, none: the value equals GDN_CUDA_MIN_TEAMS_D64).
#ifndef GDN_CUDA_MIN_TEAMS_D64_DECODE
#define GDN_CUDA_MIN_TEAMS_D64_DECODE (GDN_CUDA_ROW_LANES_D64 >= 8 ? GDN_CUDA_MIN_TEAMS_D64 : 4)
#endif
#ifndef GDN_CUDA_PREFETCH_L2
#define GDN_CUDA_PREFETCH_L2 2
#endif
#ifndef GDN_CUDA_SHARED_STATE_COPY
#define GDN_CUDA_SHARED_STATE_COPY 1
#endif
#ifndef GDN_CUDA_FOLD_ROWS
#define GDN_CUDA_FOLD_ROWS 32
#endif
#ifndef GDN_CUDA_FOLD_MIN_TEAMS
#define GDN_CUDA_FOLD_MIN_TEAMS 8
#endif
#ifndef GDN_CUDA_FOLD_ROWS_BF16
#define GDN_CUDA_FOLD_ROWS_BF16 64
#endif
#ifndef GDN_CUDA_FOLD_MIN_TEAMS_BF16
#define GDN_CUDA_FOLD_MIN_TEAMS_BF16 5
#endif
#ifndef GDN_CUDA_FOLD_MIN_TEAMS_BF16_D64
#define GDN_CUDA_FOLD_MIN_TEAMS_BF16_D64 4
#endif
#ifndef GDN_CUDA_FOLD_RECORDS_OUTER
#define GDN_CUDA_FOLD_RECORDS_OUTER 1
#endif
#ifndef GDN_CUDA_FOLD_PERSISTENT
#define GDN_CUDA_FOLD_PERSISTENT 0
#endif
#ifndef GDN_CUDA_FOLD_PERSISTENT_BF16
#define GDN_CUDA_FOLD_PERSISTENT_BF16 1
#endif
#ifndef GDN_CUDA_FOLD_CHUNK_RECORDS
#define GDN_CUDA_FOLD_CHUNK_RECORDS 16
#endif
#ifndef GDN_CUDA_FOLD_LEAN_BARRIERS
#define GDN_CUDA_FOLD_LEAN_BARRIERS 1
#endif
/// CUDA: `row_lanes` lanes split the rows of `cols_per_lane` columns; with the
/// defaults (8 x 4) a warp covers 16 columns and a lane holds (Dk/8) x 4
/// state values in registers; 16 lane groups (128 threads) per team cover a
/// 64-column tile (256-byte row segments of the state). Within a warp the
/// groups are interleaved (warp lane w: row lane w / 4, group w % 4), so each
/// quarter-warp loads two rows x 64 contiguous bytes of the state: whole
/// 32-byte sectors (with lanes outermost, 8 rows x 16 bytes per quarter-warp,
/// every sector was fetched twice; ncu, docs/perf/history.md). At Dk = 64,
/// 4 x 4 (`row_lanes`): a lane holds 16 x 4 values as at Dk = 128, a warp
/// covers 32 columns (warp lane w: row lane w / 8, group w % 8), and a team
/// of 16 groups (64 threads) the whole head.
/// Most kernels compute their norms per warp (`warp_norms`: no team
/// barrier), by quads of lanes (quad_sum_squares); a bf16 state
/// stages 8-token chunks (its 16 KiB state buffer leaves room), and so does
/// verify with a float state (no state buffer), the forward with a float
/// state 4. Persistent teams (as many as are resident, `min_teams_per_sm`
/// per SM: 3 with a float state, 4 with bf16, 3 for a bf16 decode step at
/// Dk = 128; 6 and 8 at Dk = 64, 4 for a float decode step; the measured
/// best) loop over the work
/// items; while a team computes one item, the asynchronous copy of its next
/// item's state tile into scratch is in flight (no registers held), so loads
/// and arithmetic overlap within every team; verify with a float state
/// prefetches that tile into L2 instead (prefetch_state, prefetch_l2_next).
template <class StateT>
struct RecurrenceMapping<Kokkos::Cuda, StateT> {
  /// Lanes splitting one column's rows: 8 at Dk = 128, 4 at Dk <= 64
  /// (GDN_CUDA_ROW_LANES_D64 for a float state, _D64_BF16 for bf16), so
  /// that a lane holds 16 rows x 4 columns at both head dims and a team of
  /// 16 lane groups (64 threads) covers a whole Dk = 64 head. The forward at
  /// Dk = 64 uses the same lanes as verify: its sums must add in verify's
  /// order. 4 vs 8 lanes at Dk = 64 (with 6 / 8 teams per SM instead of
  /// 3 / 4 for the forward and 5 / 6 for verify, and each thread copying its
  /// own state rows), same H200 call, medians of 3, B = 128 to 512:
  /// - bf16 state: every case faster, verify 5 to 17 % (B = 512 T = 1
  ///   73.0 -> 60.6 us), the forward 4 to 20 %.
  /// - float state: verify T = 4 and 8 7 to 20 % faster (B = 512 T = 8
  ///   212.7 -> 171.2 us) and T <= 2 within 3 %; the forward T = 8 12 to 16 %
  ///   faster, but T <= 4 6 to 13 % slower (decode B = 256 82.9 -> 88.6 us;
  ///   a decode kernel with fewer teams took part of that back,
  ///   min_teams_per_sm). GDN_CUDA_ROW_LANES_D64=8 restores the 8-lane
  ///   mapping for a float state (with its team counts, below).
  static constexpr int row_lanes(int dk) {
    return dk > 64               ? GDN_CUDA_ROW_LANES
           : sizeof(StateT) == 2 ? GDN_CUDA_ROW_LANES_D64_BF16
                                 : GDN_CUDA_ROW_LANES_D64;
  }
  static constexpr int cols_per_lane = GDN_CUDA_COLS_PER_LANE;
  static constexpr int team_threads = GDN_CUDA_LANE_GROUPS;
  /// Columns per lane of one kernel at Dk = 128: verify's main kernel
  /// (GDN_CUDA_VERIFY_COLS_PER_LANE), verify's short-row kernel
  /// (GDN_CUDA_VERIFY_SHORT_COLS_PER_LANE) and the forward's decode kernel
  /// (GDN_CUDA_DECODE_COLS_PER_LANE) may differ from cols_per_lane, with
  /// lane_groups keeping the 64-column tile (8 columns: teams of 64 threads).
  /// A lane's rows, and so the order of every sum, do not depend on its
  /// columns (columns never meet), so outputs stay bit-identical between
  /// kernels. Wider lanes share the k and q loads, the per-token sums and the
  /// per-item work over more columns, but hold twice the registers (217 to
  /// 254 at 8 columns, no spills: 6 or 8 warps per SM instead of 12 or 16). All
  /// default to cols_per_lane, the measured best where it counts. Same H200
  /// calls, medians of 3 (5 for the forward), GPU time, D128, B = 128 / 256 /
  /// 512, 8 columns against 4 (docs/performance.md, twenty-first session):
  /// verify (both kernels at 8) bf16 T = 1 8.6 to 10.1 % faster (B = 256
  /// 106.7 -> 95.9 us), but T = 2 3.4 to 4.4 % slower, T = 4 9.3 to 12.2 %
  /// and T = 8 7.9 to 10.5 %; float T = 1 1.3 to 1.6 % faster, T = 2 2.4
  /// to 3.3 % slower, T = 4 11.4 to 13.9 %, T = 8 16.2 to 19.1 %; the bf16
  /// forward's decode step 4.9 to 5.9 % slower (3 teams per SM; 4: 10.1 to
  /// 11.8 %). The CUDA tests pass with each (84/84).
  static constexpr int lane_cols(int dk, bool verify, bool short_rows = false) {
    if (dk <= 64) return cols_per_lane;
    if (verify)
      return short_rows ? GDN_CUDA_VERIFY_SHORT_COLS_PER_LANE : GDN_CUDA_VERIFY_COLS_PER_LANE;
    return short_rows ? GDN_CUDA_DECODE_COLS_PER_LANE : cols_per_lane;  // the decode kernel
  }
  /// Lane groups per team: the same 64-column tile whatever lane_cols is (so
  /// every kernel has the items recurrence_league counts).
  static constexpr int lane_groups(int dk, bool verify, bool short_rows = false) {
    return team_threads * cols_per_lane / lane_cols(dk, verify, short_rows);
  }
  static constexpr int vector_length = GDN_CUDA_VECTOR;
  static constexpr int lane_stride(int dk) { return vector_length / row_lanes(dk); }
  static constexpr int row_accumulators = 1;
  static constexpr int col_block = GDN_CUDA_COLS_PER_LANE;  // no blocking
  /// A lane group's per-token sums (the readout and the key sums of its
  /// columns, partial over its lanes' rows) through shared memory
  /// (RecurrenceKernel::compute_stage): every lane stores its partials,
  /// then, after a warp sync, each lane adds one column's partials of one
  /// kind in a fixed tree over the group's lanes (combine_partials), and the
  /// lanes holding key sums compute the delta factors and store them for
  /// the whole group to load: about 21 instructions per token against the
  /// reduce-scatter's 32 (lane_reduce_scatter, lane_gather: shuffles and
  /// selects). The tree is the reduce-scatter's butterfly (level 1 adds
  /// lanes l and l ^ L/2, ..., and a + b == b + a), so both give the same
  /// bits and each kernel may take either. Taken by verify's main kernel at
  /// 8 row lanes (Dk = 128). Same H200 call, medians of 3, D128, B = 128 /
  /// 256 / 512, GPU time, with every kernel summing this way against none:
  /// verify bf16 T = 8 3.7 to 4.7 % faster (B = 256 311.3 -> 296.3 us),
  /// T = 4 1.1 to 2.0 %, but T = 1 (the short-row kernel) 4.0 to 4.5 %
  /// slower; verify float T = 8 0.2 to 1.1 % faster, T = 1 0.5 to 0.9 %
  /// slower; the forward mixed (float T = 8 1.7 to 3.7 % faster, T = 1 0.7
  /// to 1.4 % slower; bf16 T = 2 0.8 to 3.9 % slower); Dk = 64 (4 lanes, two
  /// sums per lane, a form `f403975` had and the kernel no longer does) bf16
  /// 3 to 16 % slower. Needs one sum per lane (row_lanes = 2 x
  /// cols_per_lane: 8 at Dk = 128). GDN_CUDA_SMEM_SUMS: 0 never, 1 (default)
  /// as above, 2 in every kernel with 8 row lanes.
  static constexpr bool smem_sums(int dk, bool verify, bool short_rows = false) {
    if (GDN_CUDA_SMEM_SUMS == 0 || row_lanes(dk) != 2 * lane_cols(dk, verify, short_rows))
      return false;
    return GDN_CUDA_SMEM_SUMS >= 2 || (verify && !short_rows);
  }
  /// Runs of work items that read the same k and q (RecurrenceKernel::kKqRuns):
  /// a team takes up to this many consecutive items (the column tiles and
  /// value heads of one key head of one row) in a row, and when an item has
  /// one stage, the run's later items use the k and q rows (and their norms)
  /// that its first item staged, copying only their v and scalars: no k and
  /// q copies, no norm rounds, and their barriers' waits shorter. 1: off.
  /// The run length of a call is chosen on the host (kq_run_shift,
  /// launch.hpp): a power of two that divides the items sharing a key head,
  /// and only if its busiest team then runs at most kq_run_slack_pct per
  /// cent more items than with single items. For verify (GDN_CUDA_KQ_RUN,
  /// default 4) except at Dk = 64 with a float state (GDN_CUDA_KQ_RUN_D64_FLOAT,
  /// default 1); not for the forward
  /// (GDN_CUDA_KQ_RUN_FWD, default 1: at 4, same H200 call, bf16 decode 7.9
  /// to 11.4 % slower, T = 2 4 to 6 %, T >= 4 and float -4.1 to +2.8 %;
  /// docs/perf/history.md, sixteenth session). Same H200 call, medians of
  /// 3, D128, GPU time, runs (4 at B = 128 to 512 with a bf16 state; with a
  /// float state 1, 2, 4 at B = 128, 256, 512 and slack 3) against none:
  /// bf16 T = 1 / 2 / 4 / 8 at B = 256 106.6 / 128.4 / 179.1 / 285.3 us
  /// against 110.8 / 134.2 / 187.7 / 292.8 (-2.6 to -4.6 %), at B = 512 -5.9
  /// to -7.5 %; float B = 512 -1.4 to -9.4 %, B = 256 0 to -4.5 %. A call
  /// before (the first form of the code, other build): bf16 -3.1 to -11.4 %,
  /// Dk = 64 bf16 -0.4 to -6.3 %, Dk = 64 float -1.0 to +3.9 % (hence off
  /// there; again with the final form, GDN_CUDA_KQ_RUN_D64_FLOAT=4 in one
  /// call: -3.5 to +5.0 %, median 0.4 % slower). Slack 10 (float state:
  /// runs of 2 at B = 128 and of 4 at B = 256) against 3 in the same call:
  /// float B = 128 T = 4 / 8 -3.7 / -2.1 %, B = 256 -0.5 / -1.6 %, T <= 2
  /// within +-0.6 %, at that call's noise (unchanged cases -1.1 to +3.4 %);
  /// the results run of `4392fb7` agrees against the previous one (float
  /// B = 128 / 256 T >= 4 -2.0 to -3.7 %).
  static constexpr int kq_run_max(int dk, bool verify, bool /*short_rows*/ = false) {
    if (!verify) return GDN_CUDA_KQ_RUN_FWD;
    return dk <= 64 && sizeof(StateT) == 4 ? GDN_CUDA_KQ_RUN_D64_FLOAT : GDN_CUDA_KQ_RUN;
  }
  /// The most a call's busiest team may run beyond its share with single
  /// items for the call to take runs, in per cent (GDN_CUDA_KQ_RUN_SLACK,
  /// default 10; see kq_run_max).
  static constexpr int kq_run_slack_pct = GDN_CUDA_KQ_RUN_SLACK;
  /// The run plan (run_plan.hpp): whole rounds of runs, then single items,
  /// so that teams differ by at most one item, when a call has at least
  /// this many whole rounds of runs (GDN_CUDA_KQ_RUN_BALANCE, default 2);
  /// otherwise, and always at 0, runs only, the last round partial (the
  /// plan up to `ea77997`). Same H200 call, medians of 3, GPU time, the
  /// plan from one whole round on against runs only: verify bf16 D128
  /// B = 256 T = 1 / 2 / 4 / 8 105.3 -> 107.3 / 127.4 -> 126.1 / 178.0 ->
  /// 176.0 / 285.1 -> 283.2 us; D128 B = 128 -0.6 to -3.2 % (all 8 cases
  /// faster; 3 and 5 whole rounds), B = 256 -1.7 to +1.9 % (median -1.0 %),
  /// B = 512 -0.8 to +1.3 % (median +0.1 %); D64 bf16 B = 512 -1.2 to -2.2 %,
  /// B = 256 -0.5 to +1.3 %, but B = 128 (one whole round: 48 % of the items
  /// single) +0.6 to +2.3 %, hence the two rounds; the unchanged D64 float
  /// kernel -1.4 to +0.8 % (the call's noise).
  static constexpr int kq_run_balance_rounds = GDN_CUDA_KQ_RUN_BALANCE;
  /// Partial sums of a one-lane group's norms (GDN_CUDA_ROW_LANES = 1 only:
  /// lane groups compute their norms by quads, 4 consecutive warp lanes per
  /// q or k vector, 8 vectors per warp at once, quad_sum_squares in
  /// token_step.hpp; one 8-lane group per vector, whose lanes sat 4 apart in
  /// the warp, had a quarter warp read the same banks of 4 vectors: ncu,
  /// verify bf16 T = 4, those loads at 4 wavefronts where 1 would do, and
  /// the norm code 18 % of the stall samples).
  static constexpr int norm_accumulators = 4;
  /// Norms where the inputs are staged: with 16-byte staging copies by
  /// token (RecurrenceKernel::issue_inputs_threads) every warp stages whole
  /// k and q rows of its own tokens, so right after its own copies land (and
  /// a warp sync) it computes those tokens' norms (octet_sum_squares: the
  /// bits of quad_sum_squares), and the stage's team barrier, which is there
  /// anyway, publishes them: no norm work repeated per warp and no barrier of
  /// their own. Needs 32-lane vectors. GDN_CUDA_STAGED_NORMS: 0 off (the
  /// norms after the barrier, warp_norms), 1 (default) at Dk = 128 and, at
  /// Dk = 64, where GDN_CUDA_STAGED_NORMS_D64 (float state, default 0) or
  /// _D64_BF16 (bf16 state, default 1) says so, 2 at every Dk. At Dk = 64
  /// (4 row lanes) no kernel spills with it (the forward with a float state
  /// 146 -> 166 registers, under its cap of 170). Same H200 call, medians of
  /// 3, Dk = 64, B = 128 to 512, without -> with it at Dk = 64 for both
  /// states, measured as A, B, A (the mean of the two A's against B): verify
  /// bf16 T >= 2 2.2 % faster on average (T = 8 4.5 to 6.7 %), but verify
  /// float T >= 2 1.5 % slower (all 9 cases, 0.5 to 3.0 %; in two other
  /// calls, one build after the other in either order, 0.7 and 1.6 %), the
  /// forward with a float state at T >= 2 within 0.2 %. (With the earlier
  /// 8 row lanes at Dk = 64 the kernels' 80 and 96 registers spilled 12 to
  /// 40 bytes with it.)
  static constexpr bool staged_norms(int dk) {
    if (vector_length != 32 || GDN_CUDA_STAGED_NORMS == 0) return false;
    if (dk > 64 || GDN_CUDA_STAGED_NORMS >= 2) return true;
    return sizeof(StateT) == 2 ? GDN_CUDA_STAGED_NORMS_D64_BF16 != 0
                               : GDN_CUDA_STAGED_NORMS_D64 != 0;
  }
  /// Tokens per stage. Chunk boundaries change no bit: a token's update and
  /// sums are the same operations in the same order whichever sweep of a
  /// stage applies them, so the forward and verify may stage differently
  /// and still give bit-identical outputs (the exactness tests run windows
  /// that span several chunks of either).
  static constexpr int chunk_tokens(bool verify) {
    return sizeof(StateT) == 2 ? GDN_CUDA_CHUNK_TOKENS_BF16
                               : (verify ? GDN_CUDA_CHUNK_TOKENS_VERIFY : GDN_CUDA_CHUNK_TOKENS);
  }
  /// Teams per SM: 3 (float state) or 4 (bf16) at Dk = 128. At Dk = 64
  /// (4 row lanes: teams of 64 threads, half the size) 6 and 8, the same
  /// threads per SM as 3 and 4 at Dk = 128, for verify
  /// (GDN_CUDA_MIN_TEAMS_VERIFY_D64*: 168 and 128 registers, no spills; the
  /// row_lanes call above measured them) and the forward
  /// (GDN_CUDA_MIN_TEAMS_D64*: 146 and 125 registers; see
  /// docs/perf/history.md, eleventh session). With 8 row lanes at
  /// Dk = 64 (8x4 fragments) verify ran 5 / 6 teams of 128 threads (same
  /// run, B = 128 to 512, 3 -> 5 teams (float) 1 to 13 % faster, 4 -> 6
  /// (bf16) 3 to 9 % faster) and the forward 3 / 4 (more teams: decode 2 to
  /// 16 % slower).
  /// The forward's decode kernel (short_rows: at most one token per row on
  /// average, has_short_kernel) with a bf16 state at Dk = 128: 3 teams per
  /// SM (152 registers; at 4 the forward's 128 spill 8 bytes). Same H200
  /// call, medians of 3, B = 256, 4 -> 3 teams: T = 1 168.4 -> 159.3 us, but
  /// T = 8 333.1 -> 360.6 us, hence a kernel of its own. Likewise with a
  /// float state at Dk = 64 (4 row lanes): 4 teams per SM instead of 6
  /// (GDN_CUDA_MIN_TEAMS_D64_DECODE). Same H200 call, medians of 3, the
  /// forward with 6 / 5 / 4 teams (one kernel then, `GDN_CUDA_MIN_TEAMS_D64`),
  /// T = 1 at B = 128 / 256 / 512: 49.5 / 89.2 / 170.0 -> 51.2 / 86.5 /
  /// 163.2 -> 49.7 / 84.7 / 159.0 us; but T = 8 65.2 / 113.3 / 209.0 ->
  /// 68.7 / 122.8 / 226.0 -> 76.2 / 135.6 / 239.7 us.
  static constexpr int min_teams_per_sm(int dk, bool verify, bool short_rows = false) {
    if (verify && dk <= 64)
      return sizeof(StateT) == 2 ? GDN_CUDA_MIN_TEAMS_VERIFY_D64_BF16
                                 : GDN_CUDA_MIN_TEAMS_VERIFY_D64;
    return !verify && short_rows ? decode_teams_per_sm(dk) : forward_teams_per_sm(dk);
  }
  /// Teams per SM of the forward (and of verify at Dk = 128).
  static constexpr int forward_teams_per_sm(int dk) {
    if (dk <= 64) return sizeof(StateT) == 2 ? GDN_CUDA_MIN_TEAMS_D64_BF16 : GDN_CUDA_MIN_TEAMS_D64;
    return sizeof(StateT) == 2 ? GDN_CUDA_MIN_TEAMS_BF16 : GDN_CUDA_MIN_TEAMS;
  }
  /// Teams per SM of the forward's decode step: its own count with a bf16
  /// state at Dk = 128 and a float state at Dk = 64, else the forward's
  /// (where the two differ, the forward has a decode kernel, has_short_kernel).
  static constexpr int decode_teams_per_sm(int dk) {
    if (sizeof(StateT) == 2 && dk > 64) return GDN_CUDA_MIN_TEAMS_BF16_DECODE;
    if (sizeof(StateT) == 4 && dk <= 64) return GDN_CUDA_MIN_TEAMS_D64_DECODE;
    return forward_teams_per_sm(dk);
  }
  static constexpr int persistent_teams_per_sm(int dk, bool verify, bool short_rows = false) {
    return GDN_CUDA_PERSISTENT ? min_teams_per_sm(dk, verify, short_rows) : 0;
  }
  /// A stage's q and k norms: computed by every warp into its own slots, only
  /// a warp sync before the token loop (true), or shared out over the team's
  /// warps and published through a team barrier (false). Per warp for verify
  /// with a bf16 state (GDN_CUDA_WARP_NORMS_BF16_VERIFY; no register spills
  /// at 4 teams per SM) and, with GDN_CUDA_WARP_NORMS (default 1), for the
  /// other kernels except the two where per-team measured faster. Same H200
  /// call, medians of 3, quad norms per team vs per warp, B = 128 / 256 / 512:
  /// verify float D128 T = 4 113.4 -> 109.1 / 211.2 -> 201.7 / 407.7 ->
  /// 391.5 us (T = 8 0 to 2 % faster, T <= 2 within 1.2 %), fwd bf16 D128
  /// T = 4 117.0 -> 108.1 / 221.1 -> 204.7 / 428.6 -> 394.3 us, fwd float
  /// from 5.5 % faster to 2.8 % slower (16 of 24 cases faster). Per team
  /// stays for verify float at Dk = 64 (T = 8 64.1 -> 68.5 / 112.5 -> 120.0 /
  /// 212.3 -> 226.0 us per warp) and for the bf16 decode kernel (T = 1 86.3
  /// -> 92.9 / 158.8 -> 173.2 / 301.0 -> 332.2 us per warp).
  /// GDN_CUDA_WARP_NORMS = 0: per team except bf16 verify.
  static constexpr bool warp_norms(int dk, bool verify, bool short_rows = false) {
    if (verify && sizeof(StateT) == 2) return GDN_CUDA_WARP_NORMS_BF16_VERIFY != 0;
    if (GDN_CUDA_WARP_NORMS == 0) return false;
    if (verify) return dk > 64;
    return !(short_rows && has_short_kernel(dk, verify) && sizeof(StateT) == 2);
  }
  /// Copy the next item's state tile into scratch during the current item:
  /// the forward, and verify with a bf16 state. Verify with a float state
  /// does not (prefetch_l2_next instead): without the 32 KiB buffer its
  /// inputs are staged in 8-token chunks, one stage per item up to T = 8,
  /// where the per-stage work (norms, staging, barriers) was about a third
  /// of the non-FP32 instructions at T = 8 (ncu). Same H200 call, medians of 3,
  /// D128, B = 256, T = 1 / 2 / 4 / 8: 167.0 / 178.6 / 226.0 / 392.7 ->
  /// 161.7 / 169.5 / 221.3 / 349.5 us (B = 128 and 512 alike; D64 T = 8 6 to
  /// 11 % faster, T <= 4 within 4 %). A bf16 verify without its buffer is
  /// faster for short windows and slower for long ones, so it has two
  /// kernels (short_window_max); the forward without it: slower.
  /// Measured again on the H200 after the runs, sums and norms of later
  /// sessions (twenty-third session, `1d3c43d`, medians of 3, GPU time,
  /// against the default in the same call): the float verify with its own
  /// scratch copy and 4-token chunks (GDN_CUDA_PREFETCH_VERIFY=1,
  /// GDN_CUDA_CHUNK_TOKENS_VERIFY=4) was 1.6 to 2.5 % faster at D128 T = 4
  /// (B = 256 199.6 -> 194.7 us), 0.3 to 2.2 % slower at T <= 2, 14 % slower
  /// at T = 8 and 18 to 35 % slower at Dk = 64; the bf16 short-window kernel
  /// with its own scratch copy (each thread its fragment, no L2 prefetch; a
  /// knob of that commit, removed) 2.1 to 7.9 % slower at D128 T = 1 / 2
  /// (B = 256 T = 2 125.6 -> 135.1 us) and 4.9 to 6.0 % at Dk = 64.
  /// Hopper bulk copies of the next tile instead (twenty-fourth session,
  /// `b4fab58` to `41e1833`, removed after; cp.async.bulk per tile row into
  /// scratch, completed on an mbarrier, each thread reading its fragment
  /// from there: the float verify with 4-token chunks, the bf16 main and
  /// short-window kernels; gdn_tests_cuda 84/84 with each; same H200 calls,
  /// medians of 3, GPU time, B = 256): with the row copies issued by one
  /// warp, every case 17 to 78 % slower (float T = 4 197.8 -> 308.6 us,
  /// bf16 T = 2 126.0 -> 211.4 us), with or without a proxy fence before
  /// them; issued by all 128 threads (one row each), 1 % (float T = 1) to
  /// 41 % slower (float T = 4 198.0 -> 221.3 us, bf16 T = 2 126.1 -> 148.4
  /// us). docs/performance.md, twenty-fourth session.
  static constexpr bool prefetch_state(bool verify, bool short_rows = false) {
    return GDN_CUDA_PERSISTENT && GDN_CUDA_PREFETCH &&
           (!verify || (sizeof(StateT) == 2 ? (!short_rows && GDN_CUDA_PREFETCH_VERIFY_BF16)
                                            : GDN_CUDA_PREFETCH_VERIFY));
  }
  /// Verify with a bf16 state and RING_LEN <= 2 (the ring's extent, known on
  /// the host) runs a second kernel, without the scratch copy of the next
  /// state tile (prefetch_l2_next instead, as a float state). Same H200
  /// call, medians of 4, D128 bf16, with vs without the copy, T = 1 / 2 / 4:
  /// B = 256 118.5 -> 113.3 / 152.3 -> 145.1 / 215.3 -> 221.8 us, B = 128
  /// 66.9 -> 64.5 / 84.5 -> 79.2 / 114.7 -> 116.8, B = 512 218.2 -> 212.7 /
  /// 289.5 -> 275.9 / 413.1 -> 430.3 (`b1cc5f0`). With the two kernels vs
  /// one (`6f1c73e`, another call), T = 1 / 2: D128 2 to 5 % faster, D64 1
  /// to 8 % (B = 512 79.1 -> 72.9 / 96.2 -> 90.7 us); T = 4 the same kernel
  /// (within 1 %). GDN_CUDA_SHORT_WINDOW_BF16 = 0: one kernel.
  static constexpr int short_window_max(bool verify) {
    return verify && sizeof(StateT) == 2 && GDN_CUDA_PREFETCH_VERIFY_BF16
               ? GDN_CUDA_SHORT_WINDOW_BF16
               : 0;
  }
  /// A second kernel for short rows: verify windows of RING_LEN <=
  /// short_window_max, and the forward with a bf16 state at Dk = 128 or a
  /// float state at Dk = 64 when the call has at most one token per row
  /// (qkv.extent(0) <= B: a decode step), both chosen on the host
  /// (launch.hpp). The forward's decode kernels differ from its other kernel
  /// in teams per SM only (and the bf16 one in its norms, warp_norms).
  static constexpr bool has_short_kernel(int dk, bool verify) {
    return verify ? short_window_max(verify) > 0
                  : decode_teams_per_sm(dk) != forward_teams_per_sm(dk);
  }
  /// Persistent teams without prefetch_state: the next item's state tile is
  /// prefetched into L2 when the current item's last stage starts, and read
  /// from there straight into registers when the item starts. Another call,
  /// verify float D128, B = 256, T = 1 / 2 / 4 / 8: 158.6 / 166.3 / 216.8 /
  /// 344.3 us; without the prefetch 172.2 / 170.5 / 219.8 / 346.9; prefetched
  /// after the stage's first sweep instead (later, so as not to compete with
  /// the current tile's loads) 183.0 / 189.3 / 221.2 / 350.0. Two items ahead
  /// instead of one (`d139554`, reverted; same H200 call, medians of 3, B =
  /// 128 to 512): verify float 6 to 22 % slower (B = 256 T = 2 156.1 ->
  /// 187.6 us), the bf16 short-window kernel 2 to 9 % slower. Streaming
  /// loads (ld.global.cs) of the fragment (`b430714`, reverted): verify
  /// float 11.5 to 14.5 % slower, the short-window kernel 2.9 to 4.4 %.
  /// L2-only loads (ld.global.cg, so that the tiles leave L1 to the row
  /// offsets and slots; `80f86b9`, reverted; same call, medians of 3, GPU
  /// time, B = 128 to 512): verify float -1.3 to +1.2 %, the short-window
  /// kernel T = 1 5.9 to 6.6 % slower, T = 2 0.8 to 1.2 % slower.
  static constexpr bool prefetch_l2_next(bool verify, bool short_rows = false) {
    return GDN_CUDA_PERSISTENT && GDN_CUDA_PREFETCH_L2_NEXT != 0 &&
           !prefetch_state(verify, short_rows);
  }
  // persistent teams prefetch the state (prefetch_state, prefetch_l2_next)
  static constexpr bool prefetch_hint = false;
  /// With prefetch_state: when a team starts the copy of its next item's
  /// state and that item has at most this many tokens (0: never), it also
  /// prefetches the state tile of the item after it into L2, so that the
  /// copy started one short item later is served from L2. Same run, B = 256,
  /// always vs never: fwd bf16 T = 1 / 2 211 -> 188 / 215 -> 195 us, verify
  /// bf16 T = 2 168 -> 162 us; at T >= 4 it cost 2 to 5 %, hence the limit.
  static constexpr int prefetch_l2_max_len(bool verify, bool short_rows = false) {
    return prefetch_state(verify, short_rows) ? GDN_CUDA_PREFETCH_L2 : 0;
  }
  /// With prefetch_state, for a bf16 state and for the forward: the team
  /// copies the next state tile row by row (16-byte copies, whole 128-byte
  /// lines per quarter warp) into a swizzled tile in scratch, and each thread
  /// reads its fragment from there after a team barrier, instead of every
  /// thread copying its own fragment (8 rows x 8 or 16 bytes per warp
  /// instruction: one L2 request per 32-byte sector). ncu, fwd bf16 decode at
  /// B = 256: the L2 tag lookups were at 90.5 % of their peak; read requests
  /// 8.13 M -> 4.56 M. Same run, B = 128 to 512, with vs without: fwd bf16
  /// 3 to 14 % faster (T = 1 192.5 -> 169.4 us at B = 256), verify bf16 2 to
  /// 8 %, fwd float 5 % faster (T = 4) to 3 % slower (T = 8); verify with a
  /// float state 3 to 11 % slower (the barrier between the read and the next
  /// copy costs more than the requests save), so it keeps its own copies.
  /// Measured again in the twenty-fourth session (`257a543`, a knob since
  /// removed; with GDN_CUDA_PREFETCH_VERIFY=1 and 4-token chunks; same H200
  /// call, medians of 3, GPU time, D128, B = 128 / 256 / 512): 1.7 to 3.0 %
  /// slower at T = 1, 8.9 to 10.6 % at T = 2, 9.1 to 11.4 % at T = 4 (B =
  /// 256 193.3 -> 213.4 us), 20.5 to 21.4 % at T = 8.
  /// It needs 8 row lanes or more (only then do a lane's rows share bits
  /// 2-4, so one swizzle serves them all, load_state): not at Dk = 64.
  static constexpr bool shared_state_copy(int dk, bool verify) {
    return GDN_CUDA_SHARED_STATE_COPY != 0 && (sizeof(StateT) == 2 || !verify) &&
           row_lanes(dk) >= 8;
  }
  using schedule = Kokkos::Schedule<Kokkos::Static>;
  /// The shape constraints below, for one value of the row lanes.
  static constexpr bool lanes_valid(int lanes) {
    return lanes >= 1 && lanes <= 32 && (lanes & (lanes - 1)) == 0;
  }
  static constexpr bool vector_valid(int lanes) {
    return vector_length <= 32 && (vector_length & (vector_length - 1)) == 0 &&
           vector_length % lanes == 0 && (team_threads * lanes) % vector_length == 0;
  }
  static constexpr bool cols_valid(int lanes) {
    return lanes == 1 || (lanes >= cols_per_lane && (cols_per_lane & (cols_per_lane - 1)) == 0);
  }
  static_assert(lanes_valid(row_lanes(128)) && lanes_valid(row_lanes(64)),
                "GDN_CUDA_ROW_LANES and GDN_CUDA_ROW_LANES_D64* must be powers of two <= 32");
  static_assert(vector_valid(row_lanes(128)) && vector_valid(row_lanes(64)),
                "GDN_CUDA_VECTOR must be a power of two <= 32, a multiple of the row lanes, "
                "dividing the team");
  static constexpr bool kernel_cols_valid(int c) {
    return row_lanes(128) >= c && (c & (c - 1)) == 0 && (team_threads * cols_per_lane) % c == 0;
  }
  static_assert(cols_valid(row_lanes(128)) && cols_valid(row_lanes(64)),
                "GDN_CUDA_COLS_PER_LANE must be a power of two <= the row lanes "
                "(reduce-scatter sums)");
  static_assert(kernel_cols_valid(lane_cols(128, true)) &&
                    kernel_cols_valid(lane_cols(128, true, true)) &&
                    kernel_cols_valid(lane_cols(128, false, true)),
                "GDN_CUDA_VERIFY_COLS_PER_LANE, GDN_CUDA_VERIFY_SHORT_COLS_PER_LANE and "
                "GDN_CUDA_DECODE_COLS_PER_LANE must be powers of two <= GDN_CUDA_ROW_LANES that "
                "divide the 64-column tile (GDN_CUDA_LANE_GROUPS x GDN_CUDA_COLS_PER_LANE)");
};

/// CUDA fold: 128 threads per team, 16-byte items (4 float or 8 bf16 columns),
/// 32-row tiles for a float state (8 teams per SM, 62 registers; same run,
/// B = 128 to 512, L = 1, 5 -> 8 teams: D128 0 to 1 % and D64 1 to 3 %
/// faster) and 64-row tiles for bf16 (measured 60 -> 65 % of copy_bw at
/// T = 1 with 4 per SM), 5 teams per SM at Dk = 128 and 4 at Dk = 64 (96
/// and 80 registers). 4 -> 5 teams, medians of 3, B = 128 / 256 / 512: one
/// H200 call, L = 1, D128 0.3 to 1.8 % faster in all 12 cases, D64 2.6 to
/// 3.3 % faster at B = 128, T >= 2, but 0.4 to 1.3 % slower at B = 256 and
/// 512; an A-B-A call at D128 (5, 4, 5 teams): L = 1 0.0 to 2.0 % faster
/// (B = 128 T = 1 / 8: 83.5 -> 82.5 / 93.5 -> 91.7 us), L = 36 0.3 to 1.0 %
/// faster at T <= 4 and 1.2 to 1.6 % slower at T = 8; the repeat within
/// 0.5 % of the first. A thread keeps its
/// 32 float or 64 bf16 state values in registers: 8 loads of 16 bytes in
/// flight either way. With a bf16 state, persistent teams (`min_teams_per_sm`
/// per SM) loop over the tiles and the next tile's state is copied into
/// scratch asynchronously while a team applies the records to the current
/// one (same run, B = 256: 67 -> 74 % of copy_bw at T = 8, 81 -> 84 % at
/// T = 1); with a float state one team per tile measured faster (94 vs 88 %
/// at T = 1).
template <class StateT>
struct FoldMapping<Kokkos::Cuda, StateT> {
  static constexpr int cols_per_item = 16 / int(sizeof(StateT));
  static constexpr int team_threads = 128;
  static constexpr bool bf16_state = sizeof(StateT) == 2;
  static constexpr int rows_per_team = bf16_state ? GDN_CUDA_FOLD_ROWS_BF16 : GDN_CUDA_FOLD_ROWS;
  static constexpr int chunk_records = GDN_CUDA_FOLD_CHUNK_RECORDS;  ///< records per staged chunk
  static constexpr bool records_outer =
      GDN_CUDA_FOLD_RECORDS_OUTER != 0;  ///< record loop outside the item loop
  static constexpr int apply_block =
      1;  ///< items per record pass when the item loop is outer (not the default)
  static constexpr int min_teams_per_sm(int dk) {
    if (!bf16_state) return GDN_CUDA_FOLD_MIN_TEAMS;
    return dk <= 64 ? GDN_CUDA_FOLD_MIN_TEAMS_BF16_D64 : GDN_CUDA_FOLD_MIN_TEAMS_BF16;
  }
  static constexpr bool persistent =
      (bf16_state ? GDN_CUDA_FOLD_PERSISTENT_BF16 : GDN_CUDA_FOLD_PERSISTENT) != 0;
  static constexpr int persistent_teams_per_sm(int dk) {
    return persistent ? min_teams_per_sm(dk) : 0;
  }
  static constexpr bool prefetch_state = persistent;
  /// The next tile's copies start before the item's first team barrier (a
  /// thread's slots of the state buffer are its own), and a chunk ends with a
  /// team barrier only when the record buffer is written again before the
  /// next one (fold_kernel.hpp). 0: the barrier first and one after every chunk.
  static constexpr bool lean_barriers = GDN_CUDA_FOLD_LEAN_BARRIERS != 0;
  using schedule = Kokkos::Schedule<Kokkos::Static>;
};
#endif

/// The execution property of every team kernel's policy: Kokkos hands the
/// functor to the kernel as a kernel argument (its "local memory" launch,
/// for up to 4 KiB of functor and policy) whatever its size. Without it
/// Kokkos 3.4 switches at 512 bytes to copying them into constant memory
/// before each launch, and the verify functor is within a few bytes of
/// that: 4 more bytes of members made ptxas spill 4 to 28 bytes in the bf16
/// verify kernels (at their 128 registers) where the argument launch spills
/// none (eighteenth session). Host spaces ignore it.
using TeamKernelLaunch = Kokkos::Experimental::WorkItemProperty::HintLightWeight_t;

/// How many teams to launch for `items` work items of a kernel whose mapping
/// asks for `teams_per_sm` persistent teams: one team per item when
/// `teams_per_sm` is 0; on the host at most that many teams per thread of
/// the space; on CUDA at most the teams that are resident at once (SMs x
/// teams per SM, fewer if `shmem_bytes` per team, Kokkos's request with its
/// own bytes included, does not fit that many in an SM's shared memory).
template <class ExecSpace>
long long launch_teams(const ExecSpace& space, long long items, int teams_per_thread,
                       long long /*shmem_bytes*/) {
  if (teams_per_thread <= 0) return items;
  const long long resident = static_cast<long long>(space.concurrency()) * teams_per_thread;
  return items < resident ? items : resident;
}

#if defined(KOKKOS_ENABLE_CUDA)
inline long long launch_teams(const Kokkos::Cuda& space, long long items, int teams_per_sm,
                              long long shmem_bytes) {
  if (teams_per_sm <= 0) return items;
  const cudaDeviceProp& prop = space.cuda_device_prop();
  // The driver reserves reservedSharedMemPerBlock per block.
  const long long per_team = shmem_bytes + static_cast<long long>(prop.reservedSharedMemPerBlock);
  long long per_sm = static_cast<long long>(prop.sharedMemPerMultiprocessor) / per_team;
  per_sm = per_sm < teams_per_sm ? per_sm : teams_per_sm;
  per_sm = per_sm < 1 ? 1 : per_sm;
  const long long resident = per_sm * prop.multiProcessorCount;
  return items < resident ? items : resident;
}
#endif

/// This thread's index within its Kokkos vector (threadIdx.x on CUDA); 0 on the host.
KOKKOS_FORCEINLINE_FUNCTION int vector_index() {
#if defined(__CUDA_ARCH__)
  return static_cast<int>(threadIdx.x);
#else
  return 0;
#endif
}

#if defined(__CUDA_ARCH__)
constexpr unsigned kFullWarp = 0xffffffffu;

/// The warp lane of lane 0 of this thread's lane group: `Lanes` lanes
/// `Stride` apart within one vector of `Lanes * Stride` threads.
template <int Lanes, int Stride>
__device__ __forceinline__ unsigned lane_group_first() {
  constexpr unsigned span = unsigned(Lanes * Stride);  // warp lanes of one vector
  static_assert(span <= 32u, "a lane group must stay within a warp");
  const unsigned w = (threadIdx.y * blockDim.x + threadIdx.x) & 31u;
  return (w & ~(span - 1u)) + (w % unsigned(Stride));
}

/// The warp mask of this thread's lane group.
template <int Lanes, int Stride>
__device__ __forceinline__ unsigned lane_group_mask() {
  unsigned pattern = 0u;
  GDN_UNROLL
  for (int k = 0; k < Lanes; ++k) pattern |= 1u << (k * Stride);
  return pattern << lane_group_first<Lanes, Stride>();
}
#endif

/// Sum each element of `v` over the `Lanes` lanes of this lane group, which
/// sit `Stride` apart within one vector of `Lanes * Stride` threads (xor
/// butterfly); every lane ends with the same bits. A no-op for one lane.
template <int Lanes, int Stride, int N>
KOKKOS_FORCEINLINE_FUNCTION void lane_group_sum(float (&v)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (Lanes > 1) {
    const unsigned mask = lane_group_mask<Lanes, Stride>();
    GDN_UNROLL
    for (int off = Lanes / 2; off > 0; off /= 2) {
      GDN_UNROLL
      for (int n = 0; n < N; ++n) v[n] += __shfl_xor_sync(mask, v[n], off * Stride);
    }
  }
#else
  (void)v;
#endif
}

/// `v` plus the `v` of warp lane (this lane ^ Offset): both lanes end with
/// the same bits. CUDA: every thread of the warp calls it together
/// (full-warp mask). Host: `v`.
template <int Offset>
KOKKOS_FORCEINLINE_FUNCTION float pair_sum(float v) {
#if defined(__CUDA_ARCH__)
  static_assert(Offset > 0 && Offset < 32, "a lane of the same warp");
  v += __shfl_xor_sync(kFullWarp, v, Offset);
#endif
  return v;
}

/// Sum of `v` over the 4 consecutive warp lanes of this thread's quad (lanes
/// 4q .. 4q+3; xor butterfly, every lane ends with the same bits). CUDA: every
/// thread of the warp calls it together (full-warp mask). Host: `v`.
KOKKOS_FORCEINLINE_FUNCTION float quad_sum(float v) { return pair_sum<2>(pair_sum<1>(v)); }

/// The column of `C` whose group sum `lane_reduce_scatter` leaves in lane
/// `lane` of a group of `Lanes` (Lanes / C consecutive lanes per column).
template <int Lanes, int C>
KOKKOS_FORCEINLINE_FUNCTION constexpr int scatter_column(int lane) {
  return Lanes >= C ? lane / (Lanes / C) : 0;
}

/// \brief Reduce-scatter of `C` partial sums over the `Lanes` lanes of a group
/// (Lanes >= C, both powers of two): returns the group sum of element
/// `scatter_column<Lanes, C>(lane)`.
///
/// An xor butterfly in which, while more than one element is left, each lane
/// keeps half of them (the upper half if its lane bit is set) and sends the
/// other half, so a lane adds C - 1 + log2(Lanes / C) received values instead
/// of C log2(Lanes). Every lane that ends with an element holds the same bits
/// (the last additions are commutative pairs). Host (one lane): `v[0]`.
/// CUDA: every thread of the warp must call it together (converged, whole
/// warps of lane groups): the shuffles use the full-warp mask, which spares
/// the convergence check a computed mask costs.
template <int Lanes, int Stride, int C>
KOKKOS_FORCEINLINE_FUNCTION float lane_reduce_scatter(float (&v)[C], int lane) {
#if defined(__CUDA_ARCH__)
  static_assert(Lanes >= C && (C & (C - 1)) == 0,
                "reduce-scatter: at least as many lanes as elements");
  int n = C;  // elements left (a constant once the loop is unrolled)
  GDN_UNROLL
  for (int off = Lanes / 2; off > 0; off /= 2) {
    if (n > 1) {
      const bool hi = (lane & off) != 0;
      n /= 2;
      GDN_UNROLL
      for (int j = 0; j < n; ++j) {
        const float send = hi ? v[j] : v[j + n];
        const float keep = hi ? v[j + n] : v[j];
        v[j] = keep + __shfl_xor_sync(kFullWarp, send, off * Stride);
      }
    } else {
      v[0] += __shfl_xor_sync(kFullWarp, v[0], off * Stride);
    }
  }
  return v[0];
#else
  (void)lane;
  return v[0];
#endif
}

/// All-gather after `lane_reduce_scatter`: `out[c]` = the `own` value of the
/// lanes that hold column c (the first of them). Host (one lane): `own`.
/// CUDA: called by whole warps, like lane_reduce_scatter.
template <int Lanes, int Stride, int C>
KOKKOS_FORCEINLINE_FUNCTION void lane_gather(float own, float (&out)[C]) {
#if defined(__CUDA_ARCH__)
  const unsigned first = lane_group_first<Lanes, Stride>();
  GDN_UNROLL
  for (int c = 0; c < C; ++c) {
    out[c] =
        __shfl_sync(kFullWarp, own, static_cast<int>(first + unsigned(c * (Lanes / C) * Stride)));
  }
#else
  GDN_UNROLL
  for (int c = 0; c < C; ++c) out[c] = own;
#endif
}

/// Synchronise the threads of this thread's warp (CUDA `__syncwarp`: their
/// earlier shared-memory writes are visible to each other afterwards); a
/// no-op on the host, where a vector is one thread. Every thread of the warp
/// must call it.
KOKKOS_FORCEINLINE_FUNCTION void vector_sync() {
#if defined(__CUDA_ARCH__)
  __syncwarp();
#endif
}

/// Load N consecutive storage values as floats (16-byte loads on the GPU;
/// the caller guarantees N*sizeof(T) alignment, see validate.hpp).
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_vec(const float* p, float (&d)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      const float4 x = reinterpret_cast<const float4*>(p)[q];
      d[4 * q] = x.x;
      d[4 * q + 1] = x.y;
      d[4 * q + 2] = x.z;
      d[4 * q + 3] = x.w;
    }
  } else if constexpr (N % 2 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 2; ++q) {
      const float2 x = reinterpret_cast<const float2*>(p)[q];
      d[2 * q] = x.x;
      d[2 * q + 1] = x.y;
    }
  } else {
    for (int n = 0; n < N; ++n) d[n] = p[n];
  }
#else
  GDN_SIMD
  for (int n = 0; n < N; ++n) d[n] = p[n];
#endif
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_vec(const bf16* p, float (&d)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 8 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 8; ++q) {
      const uint4 x = reinterpret_cast<const uint4*>(p)[q];
      const unsigned w[4] = {x.x, x.y, x.z, x.w};
      GDN_UNROLL
      for (int m = 0; m < 4; ++m) {
        d[8 * q + 2 * m] = __uint_as_float(w[m] << 16);
        d[8 * q + 2 * m + 1] = __uint_as_float(w[m] & 0xffff0000u);
      }
    }
  } else if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      const uint2 x = reinterpret_cast<const uint2*>(p)[q];
      d[4 * q] = __uint_as_float(x.x << 16);
      d[4 * q + 1] = __uint_as_float(x.x & 0xffff0000u);
      d[4 * q + 2] = __uint_as_float(x.y << 16);
      d[4 * q + 3] = __uint_as_float(x.y & 0xffff0000u);
    }
  } else {
    for (int n = 0; n < N; ++n) d[n] = to_float(p[n]);
  }
#else
  for (int n = 0; n < N; ++n) d[n] = to_float(p[n]);
#endif
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_vec(float* p, const float (&s)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      reinterpret_cast<float4*>(p)[q] =
          make_float4(s[4 * q], s[4 * q + 1], s[4 * q + 2], s[4 * q + 3]);
    }
  } else {
    for (int n = 0; n < N; ++n) p[n] = s[n];
  }
#else
  GDN_SIMD
  for (int n = 0; n < N; ++n) p[n] = s[n];
#endif
}

/// Two floats rounded to bf16 (nearest even) and packed, `lo` in the low
/// half: the bits of `float_to_bf16_bits` (bf16.hpp) for every non-NaN value.
/// CUDA sm_80+: one `cvt.rn.bf16x2.f32`, which stores a NaN as the canonical
/// NaN 0x7fff (the software rule keeps the payload's top bits; a per-value
/// NaN test here cost registers and spills in the kernels).
KOKKOS_FORCEINLINE_FUNCTION unsigned bf16x2_bits(float lo, float hi) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return unsigned(float_to_bf16_bits(lo)) | (unsigned(float_to_bf16_bits(hi)) << 16);
#endif
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_vec(bf16* p, const float (&s)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 8 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 8; ++q) {
      unsigned w[4];
      GDN_UNROLL
      for (int m = 0; m < 4; ++m) w[m] = bf16x2_bits(s[8 * q + 2 * m], s[8 * q + 2 * m + 1]);
      reinterpret_cast<uint4*>(p)[q] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  } else if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      uint2 x;
      x.x = bf16x2_bits(s[4 * q], s[4 * q + 1]);
      x.y = bf16x2_bits(s[4 * q + 2], s[4 * q + 3]);
      reinterpret_cast<uint2*>(p)[q] = x;
    }
  } else {
    for (int n = 0; n < N; ++n) p[n] = bf16(s[n]);
  }
#else
  for (int n = 0; n < N; ++n) p[n] = bf16(s[n]);
#endif
}

/// Copy one value from global memory into team scratch (as float). On CUDA
/// (sm_80 and later) a float is copied with `cp.async`: the copy holds no
/// register and nothing waits for it, so a thread issues all of its staging
/// copies back to back and they are in flight together; `stage_wait`
/// completes them. Elsewhere (and for bf16 sources) a plain load and store.
/// Either way a team barrier must follow `stage_wait` before other threads
/// read what this thread staged.
KOKKOS_FORCEINLINE_FUNCTION void stage_async(float* scratch_dst, const float* src) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(scratch_dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst),
               "l"(__cvta_generic_to_global(src))
               : "memory");
#else
  *scratch_dst = *src;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION void stage_async(float* scratch_dst, const bf16* src) {
  *scratch_dst = to_float(*src);
}

/// Bytes of one GPU L2 cache line (prefetch_l2 granularity).
constexpr int kL2LineBytes = 128;

/// CUDA: bring the L2 cache line of global address `p` into L2
/// (`prefetch.global.L2`; `p` must be a valid address); elsewhere nothing.
KOKKOS_FORCEINLINE_FUNCTION void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
#else
  (void)p;
#endif
}

/// Hint that the cache line at `p` will be read soon (host: a software
/// prefetch into the outer caches; nothing on a GPU).
KOKKOS_FORCEINLINE_FUNCTION void prefetch_line(const void* p) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_prefetch(p, 0, 2);
#else
  (void)p;
#endif
}

/// Copy `N` values at `src`, `src + stride`, ... to `dst[0 .. N)` (a plain,
/// synchronous copy: the one-thread teams of the host). A unit stride is a
/// contiguous copy, which the compiler vectorises.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void stage_row(float* dst, const float* src, long stride) {
  if (stride == 1) {
    GDN_SIMD
    for (int n = 0; n < N; ++n) dst[n] = src[n];
  } else {
    for (int n = 0; n < N; ++n) dst[n] = src[n * stride];
  }
}

/// Store `scale * src[n]` at `dst + n * stride` for n < N (the host's
/// outputs); a unit stride is a contiguous, vectorised store.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_row_scaled(float* dst, long stride, float scale,
                                                  const float* src) {
  if (stride == 1) {
    GDN_SIMD
    for (int n = 0; n < N; ++n) dst[n] = scale * src[n];
  } else {
    for (int n = 0; n < N; ++n) dst[n * stride] = scale * src[n];
  }
}

/// Copy `Bytes` bytes (CUDA: 4, 8 or 16, aligned to that) from global memory
/// into team scratch, asynchronously like `stage_async`.
template <int Bytes, class T>
KOKKOS_FORCEINLINE_FUNCTION void stage_async_bytes(T* scratch_dst, const T* src) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(scratch_dst));
  if constexpr (Bytes == 16) {  // .cg: streamed through L2 only
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst),
                 "l"(__cvta_generic_to_global(src))
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst),
                 "l"(__cvta_generic_to_global(src)), "n"(Bytes)
                 : "memory");
  }
#else
  std::memcpy(static_cast<void*>(scratch_dst), static_cast<const void*>(src), Bytes);
#endif
}

/// Wait until this thread's `stage_async` copies have landed in scratch.
KOKKOS_FORCEINLINE_FUNCTION void stage_wait() {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

/// `p` advanced to the next 16-byte boundary (by 0 to 3 floats). Pointer
/// arithmetic rather than an integer round trip, so that the compiler still
/// knows that a team scratch pointer points into shared memory (CUDA: 32-bit
/// shared loads instead of 64-bit generic ones).
KOKKOS_FORCEINLINE_FUNCTION float* align16(float* p) {
  const auto misalign = reinterpret_cast<std::uintptr_t>(p) & 15u;
  return p + static_cast<int>(((16u - misalign) & 15u) / 4u);
}

/// N consecutive floats from team scratch (16-byte loads on the GPU; `p`
/// 16-byte aligned).
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_scratch(const float* p, float (&d)[N]) {
  load_vec<N>(p, d);
}

/// N consecutive floats into team scratch (16-byte stores on the GPU; `p`
/// 16-byte aligned).
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_scratch(float* p, const float (&s)[N]) {
  store_vec<N>(p, s);
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_MAPPING_HPP
