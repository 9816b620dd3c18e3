#ifndef GDN_IMPL_RECURRENCE_KERNEL_HPP
#define GDN_IMPL_RECURRENCE_KERNEL_HPP

/// \file recurrence_kernel.hpp
/// \brief The forward and verify-with-ring kernel (one functor, two modes).
///
/// Forward and verify are the same kernel: `Verify == false` always commits
/// the state; `Verify == true` records ring entries instead for rows of at
/// most RING_LEN tokens and commits longer rows. Sharing one body is what
/// makes verify's outputs bit-identical to the forward's: the same
/// instructions in the same order (see token_step.hpp).
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`;
/// `RecurrenceMapping::cols_per_lane * team_threads` divides Dv; the state
/// pool is dense (LayoutRight) and 16-byte aligned.
///
/// Thread mapping. Work items: one per (sequence b, value head h, tile of
/// `cols_per_team` state columns), tile fastest, so items that read the same
/// key and query are neighbours. Teams: one per item on the host; on CUDA
/// persistent teams (as many as are resident) take items league_rank,
/// + league_size, ..., or, in verify (`kKqRuns`, the mapping's kq_run_max;
/// the run length chosen per call, launch.hpp kq_run_shift), runs of
/// 2^shift consecutive items (the tiles and value heads of one key head of
/// a row): runs league_rank, + league_size, ..., each item of a run in
/// turn, as long as whole rounds of runs last, then single items
/// (run_plan.hpp: teams differ by at most one item); a run's later items of
/// one stage reuse the k and q rows and norms its first item staged.
/// Team: `team_threads` lane groups of `row_lanes` lanes (interleaved in a
/// warp on CUDA, mapping.hpp); lane `l` of group `cg` owns rows
/// `lane_row(l, r) = (r/4)*4*row_lanes + 4*l + r%4` (r < Dk/row_lanes; runs
/// of four rows, token_step.hpp) of columns
/// `[cg*cols_per_lane, (cg+1)*cols_per_lane)` of the tile, in registers
/// (CUDA: 16x4 floats per lane at both head dims: 8 lanes x 4 columns and
/// 128-thread teams at Dk = 128, 3 teams per SM for a float state and 4 for
/// bf16 (3 in the bf16 forward's decode kernel); 4 lanes x 4 columns and
/// 64-thread teams at Dk = 64, 6 teams per SM for a float state (4 in the
/// float forward's decode kernel) and 8 for bf16; 64-column tiles, so a
/// Dk = 64 team holds a whole head; 8-token chunks except for the forward
/// with a float state, 4; host: 1 lane x 64 columns, vectorised over
/// columns; Map::lane_cols can give a kernel other columns per lane, off by
/// default). The state is read once before an item's first token and
/// written at most once after its last.
///
/// Pipeline. A team's work is a sequence of stages (an item's chunk of
/// `chunk_tokens` tokens). Each stage's k, q, the tile's v, decay and beta are
/// staged in one of two scratch buffers (one global read per value, all of a
/// thread's copies in flight at once: `stage_async`, mapping.hpp; 16-byte
/// copies when the channels are contiguous; k and q in natural order, so a
/// lane fetches a run of four of its rows with one 16-byte load). While a
/// stage computes, the next stage's copies are in flight into the other
/// buffer, and on CUDA (`prefetch_state`) so is the next item's state tile,
/// into a third buffer (and, for a short next item, `prefetch_l2_max_len`,
/// the tile of the item after it is prefetched into L2). Without that
/// buffer (verify with a float state, `prefetch_l2_next`) the next item's
/// tile is prefetched into L2 when the current item's last stage starts and
/// loaded from there straight into registers when its turn comes; verify with
/// a bf16 state does the same when RING_LEN <= 2 (a second kernel,
/// `ShortRows`, chosen on the host: mapping.hpp, has_short_kernel; the
/// forward's short-row kernels, for a decode step with a bf16 state at
/// Dk = 128 or a float state at Dk = 64, differ in teams per SM). The state tile is
/// copied either by each thread for its own fragment, or (`shared_state_copy`:
/// the forward, and verify's copy of a bf16 state) by the whole team in whole 128-byte rows
/// into a swizzled tile (tile_chunk_offset), read after the stage's team
/// barrier; the next tile is then copied over it after a second barrier
/// (only when the stage both read a tile and is followed by a new item).
/// A stage: wait for its copies, (GPU, `staged_norms`: each warp computes
/// the q and k norms of the tokens whose rows it staged, by octets of 8
/// lanes, octet_sum_squares), team barrier, start the next stage's copies,
/// write the records' keys and decays (verify), compute the q and k norms
/// unless staged_norms did (GPU: a quad of 4 consecutive lanes per norm,
/// quad_sum_squares, the octets' bits; with the mapping's `warp_norms`
/// every warp computes all of them and only syncs itself, otherwise the
/// team's quads share them out, then a team barrier; host: the one
/// thread), then the token loop. The next item's row offsets and slots
/// are read before the wait, so that their latency overlaps it. On the host
/// (one-thread teams) the copies are plain ones, contiguous per token and
/// input, and during an item's last stage the thread prefetches the state
/// tile of the item it most likely runs next into the cache
/// (`prefetch_hint`, next_item_hint).
///
/// Token loop (token_step.hpp, fused_sweep): one sweep over the fragment per
/// token applies token t (update, readout sums) and starts token t+1 (decay,
/// key sums). GPU lane groups reduce-scatter the sums (mapping.hpp): lane l
/// ends with column l / (row_lanes / cols_per_lane) of kv and of the
/// readout, computes that column's u, which every lane gathers, and writes
/// that column's output (the pair's first lane) or record u (its second);
/// verify's main kernel at Dk = 128 adds them through shared memory instead
/// (the mapping's `smem_sums`, the same bits: lanes 0-3 of a group add the
/// readouts of columns 0-3 and write the outputs, lanes 4-7 the key sums,
/// compute u, hand it round through scratch and write the records).
/// The host lane runs the same sweep over 16-column blocks
/// (token_steps_fused) and writes all of its columns. Columns are
/// independent in the recurrence, so tiles never communicate.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/fast_div.hpp>
#include <gdn/impl/mapping.hpp>
#include <gdn/impl/run_plan.hpp>
#include <gdn/impl/token_step.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

template <class ExecSpace, class StateT, class RingT, int Dk, bool Verify, bool ShortRows = false>
struct RecurrenceKernel {
  using Map = RecurrenceMapping<ExecSpace, StateT>;
  using MemSpace = typename ExecSpace::memory_space;
  /// Teams per SM (launch bound) and persistent teams (launch_teams) of this kernel.
  static constexpr int kMinTeams = Map::min_teams_per_sm(Dk, Verify, ShortRows);
  static constexpr int kPersistentTeams = Map::persistent_teams_per_sm(Dk, Verify, ShortRows);
  /// Lanes per lane group (Map::row_lanes: 8 at Dk = 128, 4 at Dk = 64 on CUDA; 1 on the host).
  static constexpr int kLanes = Map::row_lanes(Dk);
  /// Columns per lane and lane groups per team (Map::lane_cols: verify may differ).
  static constexpr int kCols = Map::lane_cols(Dk, Verify, ShortRows);
  static constexpr int kGroups = Map::lane_groups(Dk, Verify, ShortRows);
  static constexpr int kThreads = kGroups * kLanes;  // threads per team
  /// Distance between a group's lanes in a vector.
  static constexpr int kStride = Map::lane_stride(Dk);
  static constexpr int kTeamSize = kThreads / Map::vector_length;  // Kokkos team size (vectors)
  using Policy = Kokkos::TeamPolicy<ExecSpace, typename Map::schedule,
                                    Kokkos::LaunchBounds<kThreads, kMinTeams>, TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  static constexpr int kRows = Dk / kLanes;  // rows per lane
  static constexpr int kTeamCols = kCols * kGroups;
  static constexpr int kAcc = Map::row_accumulators;
  static constexpr int kNormAcc = Map::norm_accumulators;
  static constexpr int kChunk = Map::chunk_tokens(Verify);
  /// The next item's state: copied into scratch during this one, or prefetched into L2.
  /// ShortRows: the short-row kernel (verify with RING_LEN <= Map::short_window_max, a forward
  /// decode step; Map::has_short_kernel, launch.hpp).
  static constexpr bool kPrefetchState = Map::prefetch_state(Verify, ShortRows);
  static constexpr bool kPrefetchL2Next = Map::prefetch_l2_next(Verify, ShortRows);
  static constexpr int kPrefetchL2MaxLen = Map::prefetch_l2_max_len(Verify, ShortRows);
  static constexpr int kScalars = 4;  // decay, beta, qf, kinv
  /// Lane groups (GPU): the fused token loop with reduce-scatter sums (compute_stage).
  static constexpr bool kLaneFused = kLanes > 1;
  static_assert(kThreads == kTeamSize * Map::vector_length, "team shape: vectors x vector length");
  static_assert(Dk % kLanes == 0, "row lanes must divide Dk");
  static_assert(Dk % kTeamCols == 0, "a team's column tile must divide Dv");
  static_assert(kTeamCols == Map::cols_per_lane * Map::team_threads,
                "every kernel's column tile is the one launch.hpp's recurrence_league counts");
  static_assert(kRows % kAcc == 0 && kRows % kNormAcc == 0,
                "accumulators must divide rows per lane");
  static_assert(kLanes == 1 || kRows % 4 == 0,
                "with several lanes, rows per lane must be a multiple of 4");
  static_assert((kChunk * kTeamCols) % 4 == 0, "the staged scalars must stay 16-byte aligned");

  Kokkos::View<const float**, Kokkos::LayoutStride, MemSpace> m_qkv;    // [tokens, conv_dim]
  Kokkos::View<const float**, Kokkos::LayoutStride, MemSpace> m_decay;  // [tokens, nv]
  Kokkos::View<const float**, Kokkos::LayoutStride, MemSpace> m_beta;   // [tokens, nv]
  Kokkos::View<const std::uint32_t*, MemSpace> m_offsets;               // [B+1]
  Kokkos::View<const std::uint32_t*, MemSpace> m_slots;                 // [B]
  Kokkos::View<StateT****, Kokkos::LayoutRight, MemSpace> m_state;      // [slots, nv, Dk, Dv]
  Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> m_out;          // [tokens, value_dim]
  Kokkos::View<const std::uint32_t*, MemSpace> m_ring_slots;            // [B] (verify only)
  // [ring_rows, nk, RING_LEN, record_stride]
  Kokkos::View<RingT****, Kokkos::LayoutRight, MemSpace> m_ring;
  int m_nv = 0;
  int m_group = 1;
  FastDiv m_nv_div;     // division by m_nv (item decoding)
  FastDiv m_group_div;  // division by m_group
  int m_ring_len = 0;
  long m_key_dim = 0;
  float m_q_scale = 1.0f;

  int m_items = 0;  // B * nv * tiles_per_head()
  /// qkv channels contiguous and its rows 16-byte aligned: 16-byte staging copies (GPU teams).
  bool m_vec_inputs = false;
  /// kStagedNorms in this call: 16-byte staging and at least two tokens per row on average
  /// (launch.hpp). With one token per stage only one warp has norms to compute, and the
  /// others wait for it at the stage's barrier: verify bf16 D128 T = 1 1.5 to 2.1 % slower.
  bool m_staged_norms = false;

  /// Floats of the state prefetch buffer: one tile of the state, with kPrefetchState.
  static constexpr int kStateBufFloats =
      kPrefetchState ? Dk * kTeamCols * static_cast<int>(sizeof(StateT)) / 4 : 0;
  /// Bytes of one lane's row of its fragment (one asynchronous copy).
  static constexpr int kFragRowBytes = kCols * static_cast<int>(sizeof(StateT));
  static_assert(!kPrefetchState || kFragRowBytes == 4 || kFragRowBytes == 8 || kFragRowBytes == 16,
                "state prefetch copies 4, 8 or 16 bytes per fragment row");

  /// The mapping's `shared_state_copy`: the team copies the state tile row
  /// by row into scratch (`issue_state`, tile_chunk_offset) and every thread
  /// reads its fragment from there (`load_state`).
  static constexpr bool kSharedStateCopy = kPrefetchState && Map::shared_state_copy(Dk, Verify);
  static constexpr int kTileRowBytes = kTeamCols * static_cast<int>(sizeof(StateT));
  static constexpr int kTileRowChunks = kTileRowBytes / 16;  // 16-byte chunks of a tile row
  static_assert(!kSharedStateCopy ||
                    (kTileRowChunks % 8 == 0 && (Dk * kTileRowChunks) % kThreads == 0),
                "GDN_CUDA_SHARED_STATE_COPY moves whole 128-byte lines, the same count per "
                "thread: set it to 0 for this tile shape");

  /// Byte offset in the state buffer of 16-byte chunk `chunk` of tile row
  /// `row`: rows of kTileRowBytes, chunks permuted within a row by an xor
  /// with bits 2-4 of the row, so that the 8 rows 4 apart that the lanes of a
  /// group read together (lane_row) fall on different banks.
  KOKKOS_INLINE_FUNCTION static constexpr int tile_chunk_offset(int row, int chunk) {
    return row * kTileRowBytes + ((chunk ^ ((row >> 2) & 7)) << 4);
  }

  /// Runs of items sharing k and q (Map::kq_run_max, lane groups only): a
  /// team takes 2^shift consecutive items in a row (after, m_runs), and a stage
  /// of a run's later item whose item has one stage (`Stage::reuse`) reads
  /// the k and q rows, and their norms, that the run's previous stage staged,
  /// instead of copying and norming them again. So a chunk buffer's k, q and
  /// norms (the `kq` part) and its v and scalars (the `v` part) switch
  /// buffers separately: the v part every stage, the kq part every stage
  /// that stages its own k and q.
  static constexpr int kRunMax = kLaneFused ? Map::kq_run_max(Dk, Verify, ShortRows) : 1;
  static constexpr bool kKqRuns = kRunMax > 1;
  /// kKqRuns: which runs of up to 2^shift consecutive items each team takes
  /// (run_plan.hpp; launch.hpp, kq_run_shift). Other kernels hold an int in
  /// its place, so that their parameters (and code) stay as they were.
  struct NoRuns {
    int shift = 0;
  };
  std::conditional_t<kKqRuns, RunPlan, NoRuns> m_runs;
  /// Distance between two tokens' norms in a staged chunk: with kKqRuns in
  /// the kq part (sn), otherwise in the staged scalars ([2], [3]).
  static constexpr int kNormStride = kKqRuns ? 2 : kScalars;
  /// Floats of one staged chunk: k, q (Dk each per token), the tile's v, 4 scalars, and with
  /// kKqRuns 2 norm slots per token.
  static constexpr int kChunkFloats =
      kChunk * (2 * Dk + kTeamCols + kScalars) + (kKqRuns ? 2 * kChunk : 0);
  static_assert(kChunkFloats % 4 == 0, "the second chunk buffer must stay 16-byte aligned");

  /// 16-byte staging (issue_inputs_threads): unrolled by token (fewer
  /// instructions per copy), except in the forward with a bf16 state, where
  /// the unrolled form made the kernel spill at its 128 registers (same run,
  /// B = 256: fwd bf16 T = 4 231 -> 259 us; verify bf16 T = 4 / 8 245 -> 237
  /// / 406 -> 383 us, verify float T = 8 406 -> 394 us with it).
  static constexpr bool kStageByToken = Verify || sizeof(StateT) == 4;

  /// 16-byte words of a staged k or q row (issue_inputs_threads).
  static constexpr int kKqWords = Dk / 4;
  /// 16-byte staging by token (issue_inputs_threads): tokens whose k and q rows one pass of
  /// the team copies (thread tid: word tid % kKqWords of token tid / kKqWords), and passes.
  static constexpr int kKqTokStep = kThreads / kKqWords;
  static constexpr int kKqPasses = (kChunk + kKqTokStep - 1) / kKqTokStep;
  /// The mapping's `staged_norms`: with 16-byte staging by token (m_vec_inputs
  /// and kStageByToken) each warp computes the norms of the tokens whose k and
  /// q rows it staged, before the stage's team barrier (staged_norms), when
  /// the call has at least two tokens per row (m_staged_norms); otherwise
  /// compute_stage computes them after it. Either way the same bits.
  static constexpr bool kStagedNorms = kLaneFused && Map::staged_norms(Dk) && kStageByToken &&
                                       kKqWords <= 32 && 32 % kKqWords == 0 && kThreads % 32 == 0 &&
                                       kKqTokStep <= kChunk;
  /// Per-vector norms (lane groups only; see compute_stage): after the stage's barrier, when
  /// kStagedNorms did not compute them before it.
  static constexpr bool kWarpNorms = kLaneFused && Map::warp_norms(Dk, Verify, ShortRows);
  static constexpr int kVecQuads = Map::vector_length / 4;  // quads per vector
  /// Quads sharing a stage's norms: a vector's (warp_norms) or the team's.
  static constexpr int kNormQuads = kWarpNorms ? kVecQuads : kVecQuads * kTeamSize;
  static_assert(!kLaneFused || Map::vector_length % 8 == 0,
                "quad norms: vectors of whole quarter warps (GDN_CUDA_VECTOR >= 8)");
  /// Floats of the per-vector norm slots: qf and kinv of each token of a chunk, per vector.
  static constexpr int kNormFloats = kWarpNorms ? kTeamSize * 2 * kChunk : 0;
  /// Map::smem_sums (lane groups): a vector's sum slots in scratch: the
  /// readout partials ([vector_length][cols_per_lane]: thread w's at w *
  /// cols_per_lane), kSumPad floats (so that the two kinds of a column fall
  /// on different banks), the key-sum partials (the same shape), then the
  /// delta factors of its lane groups ([lane_stride][cols_per_lane]).
  static constexpr bool kSmemSums = kLaneFused && Map::smem_sums(Dk, Verify, ShortRows);
  static constexpr int kSumPad = 16;
  static constexpr int kSumHalf = Map::vector_length * kCols + kSumPad;  // o partials + pad
  static constexpr int kSumVecFloats =
      kSmemSums ? kSumHalf + Map::vector_length * kCols + kStride * kCols : 0;
  static constexpr int kSumFloats = kSumVecFloats * kTeamSize;
  static_assert(kSumVecFloats % 4 == 0, "the sum slots must stay 16-byte aligned");

  // +4: room to align the scratch arrays to 16 bytes.
  KOKKOS_INLINE_FUNCTION static constexpr int scratch_floats() {
    return kStateBufFloats + 2 * kChunkFloats + kNormFloats + kSumFloats + 4;
  }
  KOKKOS_INLINE_FUNCTION static constexpr int tiles_per_head() { return Dk / kTeamCols; }

  /// One staged chunk in team scratch (two of them: one computed on, one
  /// filling): its kq part (k, q and, with kKqRuns, norms) from buffer `kq`,
  /// its v part (v, scalars) from buffer `v` (the same one unless kKqRuns).
  struct PlainBuf {
    float* sk;   // [chunk, Dk]
    float* sq;   // [chunk, Dk]
    float* sv;   // [chunk, cols_per_team]
    float* ssc;  // [chunk, 4]: decay, beta, qf, kinv (qf, kinv: unless kKqRuns)
    KOKKOS_INLINE_FUNCTION explicit PlainBuf(float* p)
        : sk(p),
          sq(p + kChunk * Dk),
          sv(p + 2 * kChunk * Dk),
          ssc(p + 2 * kChunk * Dk + kChunk * kTeamCols) {}
  };
  struct RunBuf {
    float* sk;
    float* sq;
    float* sv;
    float* ssc;  // [chunk, 4]: decay, beta (2 and 3 unused)
    float* sn;   // [chunk, 2]: qf, kinv (after the v part of buffer `kq`)
    KOKKOS_INLINE_FUNCTION RunBuf(float* kq, float* v)
        : sk(kq),
          sq(kq + kChunk * Dk),
          sv(v + 2 * kChunk * Dk),
          ssc(v + 2 * kChunk * Dk + kChunk * kTeamCols),
          sn(kq + 2 * kChunk * Dk + kChunk * (kTeamCols + kScalars)) {}
    KOKKOS_INLINE_FUNCTION explicit RunBuf(float* p) : RunBuf(p, p) {}
  };
  /// Two types, not one with a fifth pointer, so that the kernels without runs compile to the
  /// code they had before the runs (an unused `sn` changed their PTX).
  using ChunkBuf = std::conditional_t<kKqRuns, RunBuf, PlainBuf>;

  /// A stage of a team's work: chunk [c0, c0 + chunk_tokens) of work item `item`.
  struct PlainStage {
    int item = -1;  // -1: none
    int c0 = 0;
    static constexpr bool reuse = false;
  };
  struct RunStage {
    int item = -1;  // -1: none
    int c0 = 0;
    /// k, q and their norms are the previous stage's (the run's previous item, one stage each).
    bool reuse = false;
  };
  /// Stage::reuse: the stage reads the previous stage's k, q and norms (always false without
  /// kKqRuns: a compile-time constant there, and a type of its own for the same reason as
  /// ChunkBuf's; the run tests stay spelled out in next_stage and after, because helpers for
  /// them changed the PTX of the measured kernels).
  using Stage = std::conditional_t<kKqRuns, RunStage, PlainStage>;

  /// Everything about a work item (sequence b, value head h, column tile).
  /// Built once per item: its row_offsets and slots are read here only.
  struct Item {
    int tile, h, kh, g, len;
    std::uint32_t t_begin;
    std::uint32_t slot;      // state pool row
    std::uint32_t ring_row;  // ring pool row (verify; 0 for the forward)
    KOKKOS_INLINE_FUNCTION Item(const RecurrenceKernel& k, int item)
        : Item(k, item, k.sequence_of(item)) {}

   private:
    // Unsigned arithmetic (the indices are non-negative; the tile count is a
    // compile-time constant); the run-time divisors through FastDiv.
    KOKKOS_INLINE_FUNCTION Item(const RecurrenceKernel& k, int item, int b)
        : tile(static_cast<int>(unsigned(item) % unsigned(tiles_per_head()))),
          h(static_cast<int>(unsigned(item) / unsigned(tiles_per_head()) -
                             unsigned(b) * unsigned(k.m_nv))),
          kh(static_cast<int>(k.m_group_div.div(unsigned(h)))),
          g(h - kh * k.m_group),
          len(static_cast<int>(k.m_offsets(b + 1) - k.m_offsets(b))),
          t_begin(k.m_offsets(b)),
          slot(k.m_slots(b)),
          ring_row(Verify ? k.m_ring_slots(b) : 0u) {}
  };

  /// Tokens of the stage of item `it` that starts at token c0 of its row.
  KOKKOS_INLINE_FUNCTION static int stage_tokens(const Item& it, int c0) {
    return (it.len - c0 < kChunk) ? (it.len - c0) : kChunk;
  }

  /// The sequence of work item `item` (items: sequence, then head, then tile).
  KOKKOS_INLINE_FUNCTION int sequence_of(int item) const {
    return static_cast<int>(m_nv_div.div(unsigned(item) / unsigned(tiles_per_head())));
  }

  /// Whether the row of work item `item` has tokens.
  KOKKOS_INLINE_FUNCTION bool nonempty(int item) const {
    const int b = sequence_of(item);
    return m_offsets(b + 1) > m_offsets(b);
  }

  /// The first item at or after `item` (stepping by `stride`) with a non-empty row; -1 if none.
  KOKKOS_INLINE_FUNCTION int next_nonempty(int item, int stride) const {
    for (; item < m_items; item += stride) {
      if (nonempty(item)) return item;
    }
    return -1;
  }

  /// The first item of team `rank` of `stride` teams: -1 if none. With
  /// kKqRuns the first of its runs (m_runs).
  KOKKOS_INLINE_FUNCTION int first_item(int rank, int stride) const {
    if constexpr (kKqRuns) {
      return m_runs.first(rank, stride, m_items, [&](int i) { return nonempty(i); });
    }
    return next_nonempty(rank, stride);
  }

  /// The item a team (one of `stride`) takes after `item`: -1 if none. With
  /// kKqRuns the rest of item's run (a run lies in one row, so the row is
  /// not empty), then the team's next run (m_runs).
  KOKKOS_INLINE_FUNCTION int after(int item, int stride) const {
    if constexpr (kKqRuns) {
      return m_runs.after(item, stride, m_items, [&](int i) { return nonempty(i); });
    }
    return next_nonempty(item + stride, stride);
  }

  /// The stage after `st` (whose item is `it`) in a team's sequence.
  KOKKOS_INLINE_FUNCTION Stage next_stage(const Stage& st, const Item& it, int stride) const {
    Stage n;
    if (st.c0 + kChunk < it.len) {
      n.item = st.item;
      n.c0 = st.c0 + kChunk;
    } else {
      n.item = after(st.item, stride);
      if constexpr (kKqRuns) {  // the same run (so the same row and key head), one stage each
        n.reuse = m_runs.same_run(st.item, n.item) && it.len <= kChunk;
      }
    }
    return n;
  }

  /// Offset of fragment row r from the fragment's first row (lane_row, token_step.hpp).
  KOKKOS_INLINE_FUNCTION static constexpr int frag_row(int r) {
    return lane_row<kLanes>(0, r) * Dk;
  }

  /// This thread's fragment of the state of `item`: row r at + frag_row(r).
  KOKKOS_INLINE_FUNCTION StateT* state_fragment(const Item& it, int lane, int cg) const {
    return m_state.data() + (static_cast<std::size_t>(it.slot) * m_nv + it.h) * Dk * Dk +
           static_cast<std::size_t>(lane_row<kLanes>(lane, 0)) * Dk + it.tile * kTeamCols +
           cg * kCols;
  }

  /// Start this thread's copies of a stage's inputs (and, at the start of an
  /// item when the mapping prefetches, of its state fragment) into scratch.
  /// Every input value is read from global memory once per team.
  KOKKOS_INLINE_FUNCTION void issue_stage(const Stage& st, const Item& it, const ChunkBuf& buf,
                                          StateT* sbuf, int lane, int cg, int tid) const {
    issue_inputs(st, it, buf, tid);
    if constexpr (kPrefetchState) {
      if (st.c0 == 0) issue_state(it, sbuf, lane, cg, tid);
    }
  }

  /// Start this thread's copies of the state tile of `it` into the state buffer.
  KOKKOS_INLINE_FUNCTION void issue_state(const Item& it, StateT* sbuf, int lane, int cg,
                                          int tid) const {
    if constexpr (kSharedStateCopy) {
      // Thread tid copies chunk tid % kTileRowChunks of kRounds rows: bits
      // 2-4 of those rows are bits 0-2 of tr = tid / kTileRowChunks (so the
      // swizzle, and the offsets of the rounds from each other, are the same
      // for all of them), the other row bits come from tr >> 3 and the round.
      // Consecutive threads copy a row's consecutive 16-byte pieces.
      constexpr int kRowsPerRound = kThreads / kTileRowChunks;
      constexpr int kX = kRowsPerRound / 8;  // values of tr >> 3
      constexpr int kRounds = Dk / kRowsPerRound;
      static_assert(kRowsPerRound % 8 == 0 && (kX == 1 || kX == 2 || kX == 4),
                    "the shared state copy needs 8, 16 or 32 rows per round");
      const int tr = tid / kTileRowChunks;
      const int row0 = (tr >> 3) | ((tr & 7) << 2);
      char* const dst =
          reinterpret_cast<char*>(sbuf) + tile_chunk_offset(row0, tid % kTileRowChunks);
      const char* const src = reinterpret_cast<const char*>(state_fragment(it, 0, 0)) +
                              static_cast<std::size_t>(row0) * Dk * sizeof(StateT) +
                              (tid % kTileRowChunks) * 16;
      GDN_UNROLL
      for (int i = 0; i < kRounds; ++i) {
        const int d = ((kX * i) & 3) | (((kX * i) >> 2) << 5);  // row - row0
        stage_async_bytes<16>(dst + d * kTileRowBytes,
                              src + static_cast<std::size_t>(d) * Dk * sizeof(StateT));
      }
    } else {
      const StateT* const src = state_fragment(it, lane, cg);
      GDN_UNROLL
      for (int r = 0; r < kRows; ++r) {
        stage_async_bytes<kFragRowBytes>(sbuf + (r * kThreads + tid) * kCols, src + frag_row(r));
      }
    }
  }

  /// This thread's fragment from the state buffer (after stage_wait, and a
  /// team barrier with the shared copy).
  KOKKOS_INLINE_FUNCTION void load_state(const StateT* sbuf, int lane, int cg, int tid,
                                         float (&s)[kRows][kCols]) const {
    if constexpr (kSharedStateCopy) {
      // With 8 or more row lanes, bits 2-4 of a lane's rows (lane_row) are
      // those of its first row: one swizzle for all of them.
      static_assert(kLanes % 8 == 0,
                    "the shared state copy needs 8 or more row lanes (Map::shared_state_copy)");
      const int col_bytes = cg * kFragRowBytes;  // this lane group's columns within a row
      // Fragment row r at base + lane_row(0, r) * kTileRowBytes (tile_chunk_offset).
      const char* const base = reinterpret_cast<const char*>(sbuf) +
                               tile_chunk_offset(lane_row<kLanes>(lane, 0), col_bytes >> 4) +
                               (col_bytes & 15);
      GDN_UNROLL
      for (int r = 0; r < kRows; ++r) {
        load_vec(reinterpret_cast<const StateT*>(base + lane_row<kLanes>(0, r) * kTileRowBytes),
                 s[r]);
      }
    } else {
      GDN_UNROLL
      for (int r = 0; r < kRows; ++r) load_vec(sbuf + (r * kThreads + tid) * kCols, s[r]);
    }
  }

  /// Start this thread's copies of a stage's inputs into scratch (its k and q
  /// rows unless the stage reuses the previous stage's, Stage::reuse).
  KOKKOS_INLINE_FUNCTION void issue_inputs(const Stage& st, const Item& it, const ChunkBuf& buf,
                                           int tid) const {
    const int nt = stage_tokens(it, st.c0);
    const std::uint32_t tok0 = it.t_begin + static_cast<std::uint32_t>(st.c0);
    const long q_base = static_cast<long>(it.kh) * Dk;
    const long k_base = m_key_dim + q_base;
    const long v_base = 2 * m_key_dim + static_cast<long>(it.h) * Dk + it.tile * kTeamCols;
    const long x_tok = static_cast<long>(m_qkv.stride(0));
    const long x_chan = static_cast<long>(m_qkv.stride(1));
    const float* const x0 = &m_qkv(tok0, 0);  // token tok0 + tt at x0 + tt * x_tok
    if constexpr (kThreads == 1) {
      // One thread stages everything (the host): tokens outer, channels
      // inner, so that a unit channel stride is a contiguous, vectorised copy.
      static_assert(kLanes == 1,
                    "a one-thread team has one row lane (staged rows in natural order)");
      for (int tt = 0; tt < nt; ++tt) {
        const float* const xt = x0 + tt * x_tok;
        stage_row<Dk>(buf.sk + tt * Dk, xt + k_base * x_chan, x_chan);
        stage_row<Dk>(buf.sq + tt * Dk, xt + q_base * x_chan, x_chan);
        stage_row<kTeamCols>(buf.sv + tt * kTeamCols, xt + v_base * x_chan, x_chan);
        buf.ssc[tt * kScalars + 0] = m_decay(tok0 + tt, it.h);
        buf.ssc[tt * kScalars + 1] = m_beta(tok0 + tt, it.h);
      }
    } else {
      issue_inputs_threads(nt, tok0, x0, q_base, k_base, v_base, x_tok, x_chan, it, buf, tid,
                           !st.reuse);
    }
  }

  /// issue_stage's input copies for a team of several threads (GPU). With
  /// `m_vec_inputs` (channels contiguous, rows 16-byte aligned) 16-byte
  /// copies: a thread keeps one 16-byte word of a row (k and q: Dk/4 words;
  /// v: cols_per_team/4) and steps over the chunk's tokens; otherwise one
  /// thread per key/query channel (all tokens of the chunk) and one per v
  /// column. The scalars go to the first threads.
  KOKKOS_INLINE_FUNCTION void issue_inputs_threads(int nt, std::uint32_t tok0, const float* x0,
                                                   long q_base, long k_base, long v_base,
                                                   long x_tok, long x_chan, const Item& it,
                                                   const ChunkBuf& buf, int tid, bool kq) const {
    constexpr int kWords = kKqWords;  // 16-byte words of a k or q row
    static_assert(kThreads % kWords == 0, "a team copies whole 16-byte rows of k and q");
    constexpr int kVWords = kTeamCols / 4;  // 16-byte words of the tile's v row
    static_assert(kThreads % kVWords == 0, "a team copies whole 16-byte rows of v");
    if (m_vec_inputs && kStageByToken) {
      // Thread tid copies word tid % kWords of the k and q rows of tokens
      // tid / kWords, + kTokStep, ... and word tid % kVWords of the v rows
      // of tokens tid / kVWords, + kVStep, ... (fixed trip counts, unrolled).
      constexpr int kTokStep = kKqTokStep;
      const int w = tid % kWords;
      const int t0 = tid / kWords;
      const float* const xt0 = x0 + t0 * x_tok + 4 * w;
      GDN_UNROLL
      for (int m = 0; m < kKqPasses; ++m) {
        const int tt = t0 + m * kTokStep;
        if (kq && tt < nt) {
          const float* const xt = xt0 + m * kTokStep * x_tok;
          stage_async_bytes<16>(buf.sk + tt * Dk + 4 * w, xt + k_base);
          stage_async_bytes<16>(buf.sq + tt * Dk + 4 * w, xt + q_base);
        }
      }
      constexpr int kVStep = kThreads / kVWords;
      const int vw = tid % kVWords;
      const int v0 = tid / kVWords;
      GDN_UNROLL
      for (int m = 0; m < (kChunk + kVStep - 1) / kVStep; ++m) {
        const int tt = v0 + m * kVStep;
        if (tt < nt)
          stage_async_bytes<16>(buf.sv + tt * kTeamCols + 4 * vw,
                                x0 + tt * x_tok + v_base + 4 * vw);
      }
    } else if (m_vec_inputs) {
      // Rows (token tt, k or q) = j, j + kRowStep, ... with j = tid / kWords; v likewise, in loops.
      constexpr int kRowStep = kThreads / kWords;
      const int w = tid % kWords;
      GDN_NO_UNROLL
      for (int j = kq ? tid / kWords : 2 * nt; j < 2 * nt; j += kRowStep) {
        const int tt = j >> 1;
        const bool is_k = (j & 1) != 0;
        stage_async_bytes<16>((is_k ? buf.sk : buf.sq) + tt * Dk + 4 * w,
                              x0 + tt * x_tok + (is_k ? k_base : q_base) + 4 * w);
      }
      const int vw = tid % kVWords;
      GDN_NO_UNROLL
      for (int tt = tid / kVWords; tt < nt; tt += kThreads / kVWords) {
        stage_async_bytes<16>(buf.sv + tt * kTeamCols + 4 * vw, x0 + tt * x_tok + v_base + 4 * vw);
      }
    } else {
      GDN_NO_UNROLL
      for (int i = kq ? tid : Dk; i < Dk; i += kThreads) {
        const float* xk = x0 + (k_base + i) * x_chan;
        const float* xq = x0 + (q_base + i) * x_chan;
        GDN_NO_UNROLL
        for (int tt = 0; tt < nt; ++tt, xk += x_tok, xq += x_tok) {
          stage_async(buf.sk + tt * Dk + i, xk);
          stage_async(buf.sq + tt * Dk + i, xq);
        }
      }
      GDN_NO_UNROLL
      for (int e = tid; e < nt * kTeamCols; e += kThreads) {
        stage_async(buf.sv + e, x0 + (e / kTeamCols) * x_tok + (v_base + e % kTeamCols) * x_chan);
      }
    }
    GDN_NO_UNROLL
    for (int tt = tid; tt < nt; tt += kThreads) {
      stage_async(buf.ssc + tt * kScalars + 0, &m_decay(tok0 + tt, it.h));
      stage_async(buf.ssc + tt * kScalars + 1, &m_beta(tok0 + tt, it.h));
    }
  }

  /// A stage's chunk in the two chunk buffers at `chunks`: its kq part in buffer `kq`, its v
  /// part in buffer `v` (kKqRuns; otherwise both in buffer `v`).
  KOKKOS_INLINE_FUNCTION static ChunkBuf chunk_buf(float* chunks, int kq, int v) {
    if constexpr (kKqRuns) {
      return ChunkBuf(chunks + kq * kChunkFloats, chunks + v * kChunkFloats);
    } else {
      return ChunkBuf(chunks + v * kChunkFloats);
    }
  }

  /// Software pipeline over the team's stages: while one stage computes, the
  /// copies of the next one (inputs, and the state at an item's start) are in
  /// flight into the other scratch buffer.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    static_assert(kThreads == 1 || 4 * scratch_floats() <= 48 * 1024,
                  "team scratch over the 48 KiB of a CUDA block: lower GDN_CUDA_CHUNK_TOKENS*");
    const int stride =
        team.league_size();  // persistent teams (CUDA); one item per team on the host
    Stage cur;
    cur.item = first_item(team.league_rank(), stride);
    if (cur.item < 0) return;  // only empty rows: nothing read, nothing written
    ScratchView scratch(team.team_scratch(0), scratch_floats());
    float* const base = align16(scratch.data());
    StateT* const sbuf = reinterpret_cast<StateT*>(base);
    float* const chunks = base + kStateBufFloats;    // two chunk buffers
    float* const norms = chunks + 2 * kChunkFloats;  // per-vector norm slots (kWarpNorms)
    float* const sums = norms + kNormFloats;         // per-vector sum slots (kSmemSums)
    // Row lane, lane group and thread index (consecutive threads stage consecutive values).
    const int lane = vector_index() / kStride;
    const int cg = team.team_rank() * kStride + vector_index() % kStride;
    const int tid = team.team_rank() * Map::vector_length + vector_index();
    Item it(*this, cur.item);  // built once per item: one read of row_offsets
    issue_stage(cur, it, ChunkBuf(chunks), sbuf, lane, cg, tid);
    int nb = 0;  // the chunk buffer of the stage's v part
    int kb = 0;  // of its kq part (kKqRuns; otherwise nb)
    float s[kRows][kCols];
    while (cur.item >= 0) {
      StateT* const frag = state_fragment(it, lane, cg);
      // The next stage and its item (loads of row_offsets and slots) before
      // the wait, so that their latency overlaps it.
      const Stage nxt = next_stage(cur, it, stride);
      const Item nit = (nxt.item == cur.item || nxt.item < 0) ? it : Item(*this, nxt.item);
      // The next stage's kq part: the same as this stage's if it reuses it (kKqRuns).
      const int nkb = nxt.reuse ? kb : kb ^ 1;
      stage_wait();                  // this thread's copies of the stage have landed
      if constexpr (kStagedNorms) {  // published by the barrier below
        if (m_staged_norms && !cur.reuse) staged_norms(cur, it, chunk_buf(chunks, kb, nb), tid);
      }
      if constexpr (!kSharedStateCopy) {
        if (cur.c0 == 0) {
          if constexpr (kPrefetchState) {
            load_state(sbuf, lane, cg, tid, s);  // this thread's own copies
          } else {
            GDN_UNROLL
            for (int r = 0; r < kRows; ++r) load_vec(frag + frag_row(r), s[r]);
          }
        }
      }
      // Everyone's copies have landed, the other chunk buffer is no longer in
      // use, and (own copies) the state buffer has been read.
      team.team_barrier();
      // A tile the whole team copied is read now; the next one goes over it
      // only once everyone has (a second barrier).
      if constexpr (kSharedStateCopy) {
        if (cur.c0 == 0) load_state(sbuf, lane, cg, tid, s);
      }
      if (nxt.item >= 0) {  // start the next stage's copies
        issue_inputs(nxt, nit, chunk_buf(chunks, nkb, nb ^ 1), tid);
        if constexpr (kPrefetchState) {
          if (nxt.c0 == 0) {
            if (kSharedStateCopy && cur.c0 == 0) team.team_barrier();
            issue_state(nit, sbuf, lane, cg, tid);
          }
        }
      }
      if (nxt.item >= 0 && nxt.item != cur.item) {  // the item's last stage: L2 prefetches
        if constexpr (kPrefetchL2Next) {
          prefetch_tile_l2(nit, tid);  // the next item (no scratch copy of it)
        } else if constexpr (kPrefetchL2MaxLen > 0) {
          if (nit.len <= kPrefetchL2MaxLen) {  // a short next item: the one after it
            prefetch_tile_l2(after(nxt.item, stride), tid);
          }
        }
      }
      const StateT* const pf =
          Map::prefetch_hint ? next_item_hint(cur, nxt, nit, lane, cg) : nullptr;
      compute_stage(team, it, cur.c0, cur.reuse, chunk_buf(chunks, kb, nb), norms, sums, s, lane,
                    cg, tid, pf);
      if (cur.c0 + kChunk >= it.len && !(Verify && it.len <= m_ring_len)) {
        GDN_UNROLL
        for (int r = 0; r < kRows; ++r) store_vec(frag + frag_row(r), s[r]);
      }
      cur = nxt;
      it = nit;
      nb ^= 1;
      if constexpr (kKqRuns) kb = nkb;
    }
  }

  /// Prefetch the state tile of work item `item` (none if negative) into L2
  /// (the mapping's `prefetch_l2_max_len`).
  KOKKOS_INLINE_FUNCTION void prefetch_tile_l2(int item, int tid) const {
    if (item >= 0) prefetch_tile_l2(Item(*this, item), tid);
  }

  /// Prefetch the state tile of work item `it` into L2, a thread per row
  /// (the mapping's `prefetch_l2_max_len` and `prefetch_l2_next`).
  KOKKOS_INLINE_FUNCTION void prefetch_tile_l2(const Item& it, int tid) const {
    const StateT* const tile = state_fragment(it, 0, 0);  // lane 0 of group 0: the tile's origin
    constexpr int kRowBytes = kTeamCols * static_cast<int>(sizeof(StateT));
    for (int r = tid; r < Dk; r += kThreads) {
      const char* const row =
          reinterpret_cast<const char*>(tile + static_cast<std::size_t>(r) * Dk);
      GDN_UNROLL
      for (int b = 0; b < kRowBytes; b += kL2LineBytes) prefetch_l2(row + b);
    }
  }

  /// With the mapping's `prefetch_hint`, during an item's last stage: the
  /// item this thread most likely runs next, whose state fragment is
  /// prefetched into the cache during this stage, and whose first chunk of
  /// v (the input no other item shares) is prefetched now. With persistent
  /// teams that is the team's next item; with one team per item, item + 1
  /// (Kokkos's host backends hand a thread consecutive league ranks; a wrong
  /// guess only costs bandwidth). Returns its state fragment, or nullptr
  /// when there is none or it is an empty row.
  KOKKOS_INLINE_FUNCTION const StateT* next_item_hint(const Stage& cur, const Stage& nxt,
                                                      const Item& nit, int lane, int cg) const {
    if (nxt.item == cur.item) return nullptr;  // not the item's last stage
    if (nxt.item < 0 && cur.item + 1 >= m_items) return nullptr;
    const Item g = nxt.item >= 0 ? nit : Item(*this, cur.item + 1);
    if (g.len == 0) return nullptr;  // an empty row is skipped (and its slot may be any value)
    if (m_qkv.stride(1) == 1) {      // v rows contiguous: kTeamCols floats per token
      constexpr int kLineFloats = kCacheLineBytes / static_cast<int>(sizeof(float));
      const long x_tok = static_cast<long>(m_qkv.stride(0));
      const float* const v0 =
          &m_qkv(g.t_begin, 0) + 2 * m_key_dim + static_cast<long>(g.h) * Dk + g.tile * kTeamCols;
      const int nt = g.len < kChunk ? g.len : kChunk;
      for (int tt = 0; tt < nt; ++tt) {
        for (int c = 0; c < kTeamCols; c += kLineFloats) prefetch_line(v0 + tt * x_tok + c);
      }
    }
    return state_fragment(g, lane, cg);
  }

  /// The mapping's `staged_norms` (kStagedNorms with m_staged_norms): the query
  /// factors and key inverse norms of the tokens of stage `st` whose k and q
  /// rows this thread's warp staged (issue_inputs_threads: warp w, tokens
  /// w * kPerWarp + d + m * kTokStep, d < kPerWarp), into the staged scalars
  /// ([2], [3]), after this thread's copies landed (stage_wait) and before the
  /// stage's team barrier, which publishes them. Octet `oct` (8 consecutive
  /// lanes, octet_sum_squares) of the warp takes tasks oct, oct + 4, ...: task
  /// 2n (query) and 2n + 1 (key) of own token n. Every lane of a warp runs
  /// the same rounds (full-warp shuffles); an octet without a task reads its
  /// warp's first token and stores nothing.
  KOKKOS_INLINE_FUNCTION void staged_norms(const Stage& st, const Item& it, const ChunkBuf& buf,
                                           int tid) const {
    constexpr int kTokStep = kKqTokStep;
    constexpr int kPerWarp = 32 / kKqWords;     // tokens per copy pass of a warp
    constexpr int kOwn = kPerWarp * kKqPasses;  // own token slots
    const int nt = stage_tokens(it, st.c0);
    const unsigned ut = static_cast<unsigned>(tid);
    const int first = static_cast<int>(ut / 32u) * kPerWarp;  // own token 0
    vector_sync();  // the warp's copies (whole rows) visible to all of its lanes
    const int oct = static_cast<int>((ut % 32u) / 8u);
    const int o = static_cast<int>(ut % 8u);
    GDN_UNROLL
    for (int t0 = 0; t0 < 2 * kOwn; t0 += 4) {
      const int task = t0 + oct;
      const int n = task >> 1;
      const bool is_k = (task & 1) != 0;
      const int tt = first + n % kPerWarp + (n / kPerWarp) * kTokStep;
      const bool valid = n < kOwn && tt < nt;
      const float ss =
          octet_sum_squares<Dk>((is_k ? buf.sk : buf.sq) + (valid ? tt : first) * Dk, o);
      if (valid && o == 0) {
        if constexpr (kKqRuns) {
          buf.sn[tt * kNormStride + (is_k ? 1 : 0)] = norm_factor(ss, is_k ? 1.0f : m_q_scale);
        } else {
          buf.ssc[tt * kScalars + (is_k ? 3 : 2)] = norm_factor(ss, is_k ? 1.0f : m_q_scale);
        }
      }
    }
  }

  /// Record writes, norms and the token loop of one staged chunk.
  /// `reuse`: the stage reads the previous stage's k, q and norms (reuses).
  KOKKOS_INLINE_FUNCTION void compute_stage(const Member& team, const Item& it, int c0, bool reuse,
                                            const ChunkBuf& buf, float* norm_base, float* sum_base,
                                            float (&s)[kRows][kCols], int lane, int cg, int tid,
                                            const StateT* prefetch) const {
    const int nt = stage_tokens(it, c0);
    const bool record = Verify && it.len <= m_ring_len;
    const std::uint32_t ring_row = it.ring_row;
    const int col0 = it.tile * kTeamCols + cg * kCols;  // first state column of this lane
    const float* const k_lane = buf.sk + staged_lane_base<kLanes>(lane);
    const float* const q_lane = buf.sq + staged_lane_base<kLanes>(lane);
    if constexpr (kThreads == 1) {  // the host: one contiguous copy per record key
      if (record && it.g == 0 && it.tile == 0) {
        for (int tt = 0; tt < nt; ++tt) {
          RingT* const dst = &m_ring(ring_row, it.kh, c0 + tt, 0);
          const float* const src = buf.sk + tt * Dk;  // natural order with one lane
          GDN_SIMD
          for (int i = 0; i < Dk; ++i) dst[i] = from_float<RingT>(src[i]);
        }
      }
    } else if (record && it.g == 0 && it.tile == 0) {
      // A thread per key channel (consecutive threads, consecutive channels:
      // coalesced stores), all tokens of the chunk: no index arithmetic per value.
      const long rec_stride = static_cast<long>(m_ring.stride(2));
      for (int i = tid; i < Dk; i += kThreads) {
        const float* src = buf.sk + i;
        RingT* dst = &m_ring(ring_row, it.kh, c0, i);
        for (int tt = 0; tt < nt; ++tt, src += Dk, dst += rec_stride)
          *dst = from_float<RingT>(*src);
      }
    }
    if (record && it.tile == 0) {
      for (int tt = tid; tt < nt; tt += kThreads) {
        m_ring(ring_row, it.kh, c0 + tt, Dk + m_group * Dk + it.g) =
            from_float<RingT>(buf.ssc[tt * kScalars]);
      }
    }
    // A norm task of a one-lane group (the host): task 2*tt is the q of
    // token tt, 2*tt + 1 its k; the query factor / key inverse norm goes to
    // dst[tt * norm_tok + 0 / 1]. (Defined here, outside the branch that
    // uses it: moving it into that branch changed the host code, and verify
    // bf16 at T = 1 measured 3 to 4 % slower on the CPU; docs/perf/history.md.)
    auto norm_task = [&](int task, float* dst, int norm_tok) {
      const int tt = task / 2;
      const bool is_k = task % 2 != 0;
      const float ss =
          lane_sum_squares<kRows, kLanes, kNormAcc, kStride>((is_k ? k_lane : q_lane) + tt * Dk);
      if (lane == 0)
        dst[tt * norm_tok + (is_k ? 1 : 0)] = is_k ? key_inv_norm(ss) : query_factor(ss, m_q_scale);
    };
    // Norms: 2*nt sums of squares (task 2*tt: q of token tt, 2*tt + 1: its
    // k), stored as the query factor / key inverse norm at
    // norms[tt * norm_tok + 0 / 1]. Either staged_norms computed them before
    // the stage's barrier into the chunk's norm slots (buf.sn: kStagedNorms
    // with m_staged_norms); or (GPU lane groups) quads of lanes compute them
    // here: the team's quads, storing into the chunk's norm slots, then a team
    // barrier, or, with `warp_norms` (mapping.hpp), every vector (warp) all of
    // the stage's norms into its own slots, and only a warp sync stands
    // between the staged inputs and the token loop (4x the norm arithmetic,
    // one team barrier per stage fewer, fewer registers); or (one-lane
    // groups: the host) the team's groups share the tasks. A stage that
    // reuses the previous stage's k and q (kKqRuns) finds their norms where
    // that stage left them.
    const bool staged = kStagedNorms && m_staged_norms;
    // Distance between two tokens' norms when computed below (a vector's own
    // slots or the chunk's); norm_tok: wherever they were computed.
    constexpr int kNormTok = kWarpNorms ? 2 : kNormStride;
    float* norms;
    if constexpr (kKqRuns) {
      norms = kWarpNorms && !staged ? norm_base + team.team_rank() * (2 * kChunk) : buf.sn;
    } else {
      norms = kWarpNorms && !staged ? norm_base + team.team_rank() * (2 * kChunk) : buf.ssc + 2;
    }
    const int norm_tok = staged ? kNormStride : kNormTok;
    if (!staged && !reuse) {
      if constexpr (kLaneFused) {  // lane groups: by quads of lanes
        // A quad (4 consecutive lanes) per task (quad_sum_squares): the vector's
        // quads (warp_norms) or the team's. All lanes of a warp run the same
        // rounds (full-warp shuffles): a warp runs a round if its first quad
        // has a task, and a quad past the last task reads token 0 and stores
        // nothing.
        const int w = vector_index();
        const int quad = kWarpNorms ? w / 4 : tid / 4;
        const int warp_quad0 = kWarpNorms ? 0 : (tid & ~31) / 4;  // the first quad of this warp
        for (int t0 = 0; t0 + warp_quad0 < 2 * nt; t0 += kNormQuads) {
          const int task = t0 + quad;
          const bool valid = task < 2 * nt;
          const bool is_k = task % 2 != 0;
          const int tt = valid ? task / 2 : 0;
          const float ss =
              quad_sum_squares<Dk>((is_k ? buf.sk : buf.sq) + tt * Dk, w % 4, (w / 4) % 2);
          if (valid && w % 4 == 0) {
            norms[tt * kNormTok + (is_k ? 1 : 0)] = norm_factor(ss, is_k ? 1.0f : m_q_scale);
          }
        }
      } else {
        // Task x*team_size + w goes to group x of vector w: the first tasks are spread over the
        // warps.
        for (int task = (cg % kStride) * kTeamSize + cg / kStride; task < 2 * nt; task += kGroups) {
          norm_task(task, norms, kNormTok);
        }
      }
      if constexpr (kWarpNorms) {
        vector_sync();  // this vector's own norm slots
      } else {
        team.team_barrier();  // the staged scalars, written by the whole team
      }
    }
    const long out_tok = static_cast<long>(m_out.stride(0));
    const long rec_stride = static_cast<long>(m_ring.stride(2));
    if constexpr (kLaneFused) {
      // One sweep over the fragment per token: token t's update and readout
      // sums with token t+1's decay and key sums (fused_sweep). The group's
      // sums, partial over each lane's rows, are added either through
      // shared memory (kSmemSums: lane `lane` adds the partials of kind
      // lane / kCols, readout or key sums, of column lane % kCols; the
      // lanes with key sums compute that column's
      // delta factor, store it for the group and write the record's u, the
      // others write the output) or by a reduce-scatter (lane `lane` ends
      // with column scatter_column(lane) of both kinds, computes its delta
      // factor, which every lane gathers; of the kPer lanes holding a
      // column, the first writes the output and the second the record's u).
      constexpr int kPer = kLanes / kCols;  // lanes per scattered column
      static_assert(!kSmemSums || kLanes == 2 * kCols,
                    "shared-memory sums: one sum per lane (twice as many lanes as columns)");
      const int my_col = kSmemSums ? lane % kCols : scatter_column<kLanes, kCols>(lane);
      const bool out_lane = kSmemSums ? lane < kCols : lane % kPer == 0;
      const bool kv_lane = kSmemSums ? lane >= kCols : true;
      const bool rec_lane = record && (kSmemSums ? kv_lane : (kPer == 1 || lane % kPer == 1));
      // Token tt's output and record u at out_p / rec_p (advanced per token).
      float* out_p = &m_out(it.t_begin + static_cast<std::uint32_t>(c0),
                            static_cast<long>(it.h) * Dk + col0 + my_col);
      RingT* rec_p =
          record ? &m_ring(ring_row, it.kh, c0, Dk + it.g * Dk + col0 + my_col) : nullptr;
      const float* const v_own = buf.sv + cg * kCols + my_col;  // token tt at + tt * kTeamCols
      float u[kCols];
      float oacc[1][kCols];
      float nacc[1][kCols];
      // Token tt's decay and beta (staged), its query factor and key inverse norm (this vector's
      // norms, the chunk's norm slots or the staged scalars).
      float db[2];
      float nm[2];
      auto load_scalars = [&](int tt) {
        if constexpr (kWarpNorms || kKqRuns) {
          load_scratch<2>(buf.ssc + tt * kScalars, db);
          load_scratch<2>(norms + norm_tok * tt, nm);
        } else {  // all four staged together
          float sc[kScalars];
          load_scratch<kScalars>(buf.ssc + tt * kScalars, sc);
          db[0] = sc[0];
          db[1] = sc[1];
          nm[0] = sc[2];
          nm[1] = sc[3];
        }
      };
      load_scalars(0);
      fused_sweep<kRows, kCols, kLanes, 1, kCols, false, true>(s, 0, k_lane, q_lane, u, oacc,
                                                               k_lane, db[0], nacc);
      // Token tt's sweep: its update and readout sums (oacc) and, when a token
      // follows (the return value), that token's scalars, decay and key sums (nacc).
      auto sweep = [&](int tt) {
        const float* const kt = k_lane + tt * Dk;
        const float* const qt = q_lane + tt * Dk;
        const bool next = tt + 1 < nt;
        if (next) {
          load_scalars(tt + 1);
          fused_sweep<kRows, kCols, kLanes, 1, kCols, true, true>(s, 0, kt, qt, u, oacc, kt + Dk,
                                                                  db[0], nacc);
        } else {
          fused_sweep<kRows, kCols, kLanes, 1, kCols, true, false>(s, 0, kt, qt, u, oacc, kt, 0.0f,
                                                                   nacc);
        }
        return next;
      };
      if constexpr (kSmemSums) {
        // This vector's sum slots (kSumVecFloats): thread w's partials at w * kCols (readout)
        // and kSumHalf + w * kCols (key sums); its lane group's delta factors at dst_u.
        const int w = vector_index();
        const int gi = w % kStride;  // the lane group within the vector
        float* const vsum = sum_base + team.team_rank() * kSumVecFloats;
        float* const own = vsum + w * kCols;
        float* const dst_u = vsum + 2 * kSumHalf - kSumPad + gi * kCols;
        // The group's sum of kind `kind` (0 readout, 1 key sums) of column my_col: its lanes'
        // partials (lane l' at vector thread l' * kStride + gi) in a fixed tree.
        auto group_sum = [&](int kind) {
          const float* const p = vsum + kind * kSumHalf + gi * kCols + my_col;
          float x[kLanes][1];
          GDN_UNROLL
          for (int l = 0; l < kLanes; ++l) x[l][0] = p[l * kStride * kCols];
          combine_partials<kLanes, 1>(x);
          return x[0][0];
        };
        // Token 0's key sums (nacc): its delta factors, gathered into u.
        store_scratch<kCols>(own + kSumHalf, nacc[0]);
        vector_sync();  // the partials in place
        float u_own = 0.0f;
        if (kv_lane) {
          u_own = delta_factor(v_own[0], group_sum(1), db[1], nm[1]);
          dst_u[my_col] = u_own;
        }
        vector_sync();  // the delta factors in place
        load_scratch<kCols>(dst_u, u);
        // Per token: the partials stored, a warp sync, the sums read (output
        // and next delta factors), a second warp sync (every read of the
        // partials done before the next token's stores; the delta factors in
        // place), the delta factors loaded. The second sync also orders the
        // loads of u before the next token's stores of it.
        for (int tt = 0; tt < nt; ++tt) {
          const float qf = nm[0];  // token tt's (sweep loads the next token's scalars)
          const bool next = sweep(tt);
          store_scratch<kCols>(own, oacc[0]);
          if (next) store_scratch<kCols>(own + kSumHalf, nacc[0]);
          if (rec_lane) *rec_p = from_float<RingT>(u_own);  // token tt's
          vector_sync();                                    // the partials in place
          // One sum per lane, its kind by lane (no divergent sums).
          const float x = group_sum(lane / kCols);
          if (out_lane) *out_p = qf * x;
          if (next && kv_lane) {
            u_own = delta_factor(v_own[(tt + 1) * kTeamCols], x, db[1], nm[1]);
            dst_u[my_col] = u_own;
          }
          out_p += out_tok;
          if (record) rec_p += rec_stride;
          if (next) {
            vector_sync();  // every partial read; the delta factors in place
            load_scratch<kCols>(dst_u, u);
          }
        }
      } else {
        float u_own = delta_factor(v_own[0], lane_reduce_scatter<kLanes, kStride>(nacc[0], lane),
                                   db[1], nm[1]);
        lane_gather<kLanes, kStride>(u_own, u);
        for (int tt = 0; tt < nt; ++tt) {
          const float qf = nm[0];  // token tt's (sweep loads the next token's scalars)
          const bool next = sweep(tt);
          const float o_own = lane_reduce_scatter<kLanes, kStride>(oacc[0], lane);
          if (out_lane) *out_p = qf * o_own;
          if (rec_lane) *rec_p = from_float<RingT>(u_own);
          out_p += out_tok;
          if (record) rec_p += rec_stride;
          if (next) {
            const float kv = lane_reduce_scatter<kLanes, kStride>(nacc[0], lane);
            u_own = delta_factor(v_own[(tt + 1) * kTeamCols], kv, db[1], nm[1]);
            lane_gather<kLanes, kStride>(u_own, u);
          }
        }
      }
    } else {
      // One lane per column (the host): the chunk's tokens run fused over
      // column blocks (token_steps_fused), then the lane writes every output
      // and record u of its columns.
      float us[kChunk][kCols];
      float os[kChunk][kCols];
      token_steps_fused<kRows, kCols, kAcc, Map::col_block, kChunk>(
          s, k_lane, q_lane, Dk, buf.sv + cg * kCols, kTeamCols, buf.ssc, kScalars, nt, us, os,
          prefetch, static_cast<long>(Dk));
      float* const out_row = &m_out(it.t_begin, static_cast<long>(it.h) * Dk + col0);
      const long out_col = static_cast<long>(m_out.stride(1));
      for (int tt = 0; tt < nt; ++tt) {
        const float qf = buf.ssc[tt * kScalars + 2];
        const int p = c0 + tt;  // position in the row
        store_row_scaled<kCols>(out_row + p * out_tok, out_col, qf, os[tt]);
        if (record) {
          RingT* const rec_u = &m_ring(ring_row, it.kh, p, Dk + it.g * Dk + col0);
          GDN_SIMD
          for (int c = 0; c < kCols; ++c) rec_u[c] = from_float<RingT>(us[tt][c]);
        }
      }
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_RECURRENCE_KERNEL_HPP
