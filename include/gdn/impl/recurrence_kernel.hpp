#ifndef GDN_IMPL_RECURRENCE_KERNEL_HPP
#define GDN_IMPL_RECURRENCE_KERNEL_HPP

/// \file recurrence_kernel.hpp
/// \brief The forward and verify-with-ring kernel: one functor, two modes.
///
/// `Verify == false` commits every row's state; `Verify == true` records ring
/// entries instead for rows of at most RING_LEN tokens and commits longer
/// rows. Both run the chunk algebra of chunk_algebra.hpp through the same
/// code, which is why verify's outputs are bit-identical to the forward's.
/// `Lazy` (a verify into a history ring, lazy_kernel.hpp): before its first
/// chunk the team folds the row's pending history records into its
/// registers (the fold's own update, rounded where a step ended) and writes
/// the window's records behind them; it never stores the state of a
/// recording row.
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`, a
/// multiple of 64; the state pool is dense (LayoutRight) and 16-byte aligned.
///
/// Thread mapping. Work items are (sequence b, value head h, tile of `Tile`
/// state columns: kTiledCols = 64, or 32 or 16 for the CUDA forward with a
/// workspace over few rows, launch_impl.hpp), tile fastest, so teams reading
/// the same key and query run side by side; a team takes items league_rank, +
/// league_size, ... (host: one team per item; CUDA: persistent teams, each
/// prefetching its next item's state tile into L2). The team holds its state tile in registers
/// (TeamShape, backend.hpp: CUDA 128 threads, lane `l` of column group `cg`
/// holds 16 rows x Tile / 16 columns at Dk = 128; host one thread, the whole tile)
/// from the first chunk to the last: the state is read once and written at
/// most once. Per chunk of `chunk_tokens` tokens: the team stages k, q, the
/// tile's v, decay and beta in scratch; every thread projects its
/// fragment on each token's k and q (step 1, lane groups reduce); lane
/// groups take token pairs for step 2's Gram entries and norms; threads take
/// tile columns for step 3's delta factors and readout (sequential in j;
/// host: a triangular solve and products over the whole tile,
/// host_dense.hpp); verify writes the records;
/// step 4 folds the chunk into the registers if the state goes on.
/// With the parallel pass's coefficients (`m.coef`, a forward given a
/// workspace: coef_kernel.hpp) the team stages them with the chunk's inputs
/// instead of the gates and skips step 2.

#include <gdn/config.hpp>
#include <gdn/impl/backend.hpp>
#include <gdn/impl/chunk_algebra.hpp>
#include <gdn/impl/host_algebra.hpp>
#include <gdn/impl/lazy_kernel.hpp>
#include <gdn/impl/params.hpp>
#include <gdn/ring.hpp>
#include <gdn/workspace.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

template <class ExecSpace, class ActT, class StateT, class RingT, int Dk, bool Verify,
          bool Lazy = false, int Tile = kTiledCols>
struct RecurrenceKernel {
  static_assert(Verify || !Lazy, "lazy commit is a verify mode");
  static_assert(Tile == kTiledCols || !Verify, "narrow tiles: the forward only");
  using Traits = TeamTraits<ExecSpace, Dk, Tile>;
  using M = typename ExecSpace::memory_space;
  static constexpr int kLanes = Traits::lanes;
  static constexpr int kCols = Traits::cols;
  static constexpr int kThreads = Traits::threads;
  static constexpr int kRows = Dk / kLanes;  // fragment rows per thread
  static constexpr int kC = chunk_tokens;
  static constexpr int kTiles = Dk / Tile;  // tiles per head
  /// Staged keys and queries: on the GPU each 16-row block padded to 20
  /// floats, so a column group's eight lanes read their blocks without bank
  /// conflicts (ChunkScratch).
  static constexpr int kBlockLd = kLanes > 1 ? kBlockRows + 4 : kBlockRows;
  using Scratch = ChunkScratch<Dk, kC, Tile, false, kBlockLd>;
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kThreads, Traits::min_teams>,
                                    TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  static_assert(Dk % Tile == 0 && kRows % 4 == 0, "head dim: a multiple of the tile");
  static_assert(Tile % kThreads == 0 || kThreads % Tile == 0,
                "step 3 shares the tile's columns evenly");

  RecurrenceParams<ActT, StateT, RingT, M> m;
  int m_items = 0;  // B * nv * kTiles
  bool m_long_only = false;  // only rows longer than a chunk (CUDA, beside StreamKernel)

  /// Gate values each thread stages per chunk.
  static constexpr int kGateSteps = (kC + kThreads - 1) / kThreads;
  /// Floats of the bf16 staging area (raw k, q, v of a chunk; none for float
  /// activations). It lies over the p, r and u regions, which no thread uses
  /// from the barrier before `stage` to the barrier after it.
  static constexpr int kRawFloats =
      std::is_same<ActT, float>::value ? 0 : kC * (2 * Dk + Tile) / 2;
  /// Whether the raw chunk fits over p, r and u (a 64-column tile); a narrow
  /// tile's has a region of its own after the chunk's scratch.
  static constexpr bool kRawOver = kRawFloats <= 3 * Scratch::kTile;
  /// Floats of scratch before the long-row list, and with it.
  static constexpr int kScratchFloats = Scratch::kFloats + 4 + (kRawOver ? 0 : kRawFloats);
  static constexpr int kListFloats = kScratchFloats + kThreads + 1;
  /// Team scratch in bytes (16 bytes of slack for alignment).
  static constexpr int scratch_bytes() { return int(sizeof(float)) * kListFloats; }
  /// Work items (teams) of a batch of B sequences.
  static long long items(long long batch, int nv) { return batch * nv * kTiles; }
  static long long league(const ExecSpace& space, long long items) {
    return Traits::league(space, items);
  }

  /// A work item and the index entries it reads (its row, length, pool and
  /// ring rows), loaded together; len 0: no item (an empty or a padding row).
  /// Lazy: `pending` history records to fold first, which is also the
  /// window's first record position.
  struct Item {
    int b = 0, h = 0, tile = 0, t0 = 0, len = 0;
    std::uint32_t slot = 0, ring_row = 0;
    int pending = 0;
  };

  /// The entries of item `item` (its loads are issued here and waited for
  /// only where a value is used).
  KOKKOS_INLINE_FUNCTION Item item_at(int item) const {
    Item it;
    it.tile = item % kTiles;
    const int bh = item / kTiles;
    it.h = bh % m.nv;
    it.b = bh / m.nv;
    const std::uint32_t o0 = m.in.row_offsets(it.b), o1 = m.in.row_offsets(it.b + 1);
    it.slot = m.slots(it.b);
    if constexpr (Verify) it.ring_row = m.ring_slots(it.b);
    it.t0 = static_cast<int>(o0);
    it.len = static_cast<int>(o1) - it.t0;
    // A padding row (gdn::pad_slot) is no work: none of its rows is read or written.
    if (it.slot == pad_slot || (Verify && it.ring_row == pad_slot)) it.len = 0;
    if constexpr (Lazy) {
      if (it.len > 0) it.pending = pending_records(m.ledger(it.ring_row, 0), m.ring_len);
    }
    return it;
  }

  /// Items league_rank, + league_size, ...: on the host one item per team;
  /// on CUDA persistent teams. A team takes its items kThreads at a time:
  /// each thread checks one item's row (never a padding row; with
  /// `m_long_only`, beside the streaming kernel, only rows longer than a
  /// chunk are taken), the taken ones are listed in scratch (in any order:
  /// items are independent), then run, each hinting the next one's state
  /// tile into L2 while it computes.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    if (team.league_rank() >= m_items) return;
    // Team scratch is taken once per team: every take advances Kokkos' scratch pointer.
    ScratchView area(team.team_scratch(0), kListFloats);
    float* const base = area.data();
    int* const list = reinterpret_cast<int*>(base + kScratchFloats);  // [kThreads + 1]
    const int rank = team.team_rank(), stride = team.league_size();
    const int shortest = m_long_only ? kC + 1 : 1;
    for (int first = team.league_rank(); first < m_items; first += stride * kThreads) {
      team.team_barrier();  // the last batch's readers are done with the list
      if (rank == 0) list[kThreads] = 0;
      team.team_barrier();
      const int item = first + rank * stride;
      if (item < m_items) {
        const int len = item_at(item).len;  // 0 for a padding row
        if (len >= shortest) list[Kokkos::atomic_fetch_add(&list[kThreads], 1)] = item;
      }
      team.team_barrier();
      const int count = list[kThreads];
      Item cur = count > 0 ? item_at(list[0]) : Item();
      for (int q = 0; q < count; ++q) {
        const Item nxt = q + 1 < count ? item_at(list[q + 1]) : Item();
        run_item(team, base, cur, nxt);
        cur = nxt;
      }
    }
  }

  KOKKOS_FORCEINLINE_FUNCTION void run_item(const Member& team, float* base, const Item& it,
                                       const Item& nxt) const {
    const int tile = it.tile, h = it.h, t0 = it.t0, len = it.len;
    const bool record = Verify && len <= m.ring_len;
    const int kh = h / m.group;
    const int g = h % m.group;
    const int rank = team.team_rank();
    const int lane = rank % kLanes;
    const int cg = rank / kLanes;  // lane group
    const int col0 = cg * kCols;   // this thread's first tile column
    const unsigned mask = group_mask<kLanes>(rank);
    const int tcol = tile * Tile;  // the tile's first column in the head

    const Scratch s(align16(base));
    // bf16 staging: over p, r and u, or after the chunk's scratch
    ActT* const raw_act = reinterpret_cast<ActT*>(kRawOver ? s.p : s.k + Scratch::kFloats);

    StateT* const srow = &m.state(it.slot, h, 0, tcol + col0);  // row 0 of the fragment
    float st[kRows][kCols];
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) load_frag<kCols>(srow + (lane * kRows + i) * Dk, st[i]);
    if constexpr (Lazy) {
      if (it.pending > 0) advance(team, s, st, it, kh, g, lane, col0, tcol);
    }
    const int pos0 = it.pending;  // the window's first record position (0 but in lazy mode)

    for (int c0 = 0; c0 < len; c0 += kC) {
      const int n = len - c0 < kC ? len - c0 : kC;
      team.team_barrier();  // the last chunk's (or item's) readers are done with scratch
      stage(team, s, raw_act, t0 + c0, n, h, kh, tcol);
      team.team_barrier();
      if (c0 + kC < len) {
        prefetch_chunk(team, t0 + c0 + kC, len - c0 - kC < kC ? len - c0 - kC : kC, h, kh, tcol);
      } else if (nxt.len > 0) {
        prefetch_tile_l2(&m.state(nxt.slot, nxt.h, 0, nxt.tile * Tile), Dk,
                         Tile * int(sizeof(StateT)), long(Dk) * long(sizeof(StateT)), rank,
                         kThreads);
      }
      const bool staged_coefs = m.coef.data() != nullptr;  // the parallel pass computed them
      if constexpr (kThreads == 1) {  // host: SIMD over blocks (dots) and columns (step 1)
        if (!staged_coefs) host_chunk_coefficients(s, n, m.q_scale);
        for (int j = 0; j < n; ++j) host_project(st, s, j, col0);
      } else {
        for (int e = staged_coefs ? n * n : cg; e < n * n; e += Traits::col_groups) {
          const int j = e / n, i = e % n;  // token pairs, a lane group each
          if (i <= j) chunk_coefficients<kLanes>(s, j, i, lane, mask, m.q_scale);
        }
        constexpr int kStep = kLanes / (2 * kCols);  // tokens per projection (project)
        for (int j = 0; j < n; j += kStep) project<kLanes>(st, s, j, n, lane, col0);
      }
      team.team_barrier();
      const long ocol = long(h) * Dk + tcol;  // the tile's first output column
      if constexpr (kThreads == 1) {  // host: SIMD blocks of columns
        const int row = static_cast<int>(it.ring_row);
        const int uoff = RingLayout{Dk, Dk, m.group}.delta_offset(g) + tcol;
        for (int cb = 0; cb < Tile; cb += kHostColBlock) {
          const auto emit_u = [&](int j, int w, float u) {
            if (record) m.ring(row, kh, pos0 + c0 + j, uoff + cb + w) = RingT(u);
          };
          const auto emit_out = [&](int j, int w, float o) {
            m.out.write(t0 + c0 + j, ocol + cb + w, o);
          };
          readout_columns<kHostColBlock>(s, n, cb, emit_u, emit_out);
        }
      } else if (rank < Tile) {  // a thread per column
        const int row = static_cast<int>(it.ring_row);
        const int ucol = RingLayout{Dk, Dk, m.group}.delta_offset(g) + tcol + rank;
        const auto emit_u = [&](int j, int, float u) {
          if (record) m.ring(row, kh, pos0 + c0 + j, ucol) = RingT(u);
        };
        const auto emit_out = [&](int j, int, float o) { m.out.write(t0 + c0 + j, ocol + rank, o); };
        readout_columns<1>(s, n, rank, emit_u, emit_out);
      }
      if (record) write_key_records(team, s, int(it.ring_row), pos0 + c0, n, kh, g, tile);
      if (!record || c0 + n < len) {
        team.team_barrier();  // every column's delta factors are in scratch
        fold_fragment<kLanes>(st, lane, n, s.k, Scratch::kLd, s.u + col0, Tile, s.a, 1,
                              kBlockLd);
      }
    }
    if (!record) {
      GDN_UNROLL
      for (int i = 0; i < kRows; ++i)
        store_frag<kCols>(srow + (lane * kRows + i) * Dk, st[i]);
    }
  }

  /// Lazy: folds the item's pending history records (positions 0 ..
  /// it.pending-1 of its ring row) into the fragment, kC at a time: the
  /// team stages their keys, the tile's delta factors of head g and the
  /// decays in the chunk's scratch, then every thread folds them in
  /// (fold_steps: the chunk fold's update, rounded where a step ended).
  KOKKOS_INLINE_FUNCTION void advance(const Member& team, const Scratch& s,
                                      float (&st)[kRows][kCols], const Item& it, int kh, int g,
                                      int lane, int col0, int tcol) const {
    const int rank = team.team_rank();
    const int row = static_cast<int>(it.ring_row);
    const RingLayout lay{Dk, Dk, m.group};
    const int uoff = lay.delta_offset(g) + tcol, aoff = lay.decay_offset(g);
    for (int p0 = 0; p0 < it.pending; p0 += kC) {
      const int cnt = it.pending - p0 < kC ? it.pending - p0 : kC;
      team.team_barrier();  // the last records' (or item's) readers are done with scratch
      for (int e = rank; e < cnt * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        stage_ring_value(s.k + Scratch::at(j, i), &m.ring(row, kh, p0 + j, lay.key_offset() + i));
      }
      for (int e = rank; e < cnt * Tile; e += kThreads) {
        const int j = e / Tile, c = e % Tile;
        stage_ring_value(s.u + e, &m.ring(row, kh, p0 + j, uoff + c));
      }
      for (int j = rank; j < cnt; j += kThreads) stage_ring_value(s.a + j, &m.ring(row, kh, p0 + j, aoff));
      async_wait();
      team.team_barrier();
      fold_steps<StateT>(st, m.ledger, row, p0, cnt, [&](int j, int cn) {
        fold_fragment<kLanes>(st, lane, cn, s.k + Scratch::at(j, 0), Scratch::kLd,
                              s.u + col0 + j * Tile, Tile, s.a + j, 1, kBlockLd);
      });
    }
  }

  /// delta_readout of `W` columns from `c0` with the smallest compile-time
  /// token bound that holds `n` (few registers for short windows).
  template <int W, class EmitU, class EmitOut>
  KOKKOS_FORCEINLINE_FUNCTION static void readout_columns(const Scratch& s, int n, int c0,
                                                          const EmitU& emit_u,
                                                          const EmitOut& emit_out) {
    if (n <= 4) {
      delta_readout<4, W>(s, n, c0, emit_u, emit_out);
    } else if (n <= 8) {
      delta_readout<8, W>(s, n, c0, emit_u, emit_out);
    } else {
      delta_readout<kC, W>(s, n, c0, emit_u, emit_out);
    }
  }

  /// Chunk inputs into scratch as floats: k, q of key head kh, v of the
  /// tile, decay, beta (m.in, token_io.hpp). Every copy of a thread is in
  /// flight at once. A float qkv is copied
  /// by async copies straight into place (16 bytes where its rows are
  /// contiguous and 16-byte aligned, m.vec_qkv). A bf16 qkv with m.vec_qkv is
  /// copied raw into the bf16 staging area `raw` (16-byte async copies), and
  /// each thread widens the words it copied into place (8 values a step);
  /// without m.vec_qkv it is widened through registers a value at a time.
  /// Given gates of float type are async copies; raw float gates are loaded
  /// and computed (gate_decay, gate_beta) a token at a time; bf16 gates are
  /// loaded all at once (while the copies are in flight), widened, and, if
  /// raw, computed.
  /// The caller's team barrier follows.
  KOKKOS_INLINE_FUNCTION void stage(const Member& team, const Scratch& s, ActT* raw, int t, int n,
                                    int h, int kh, int tcol) const {
    const int rank = team.team_rank();
    const long qc = long(kh) * Dk;
    const long kc = m.key_dim + qc;
    const long vc = 2 * m.key_dim + long(h) * Dk + tcol;
    const auto& x = m.in.m_qkv;
    constexpr bool kFloat = std::is_same<ActT, float>::value;
    if (m.vec_qkv) {
      constexpr int kE = 16 / int(sizeof(ActT));  // values per 16-byte word
      constexpr int kW = Dk / kE;                 // words of a key or query
      constexpr int kVW = Tile / kE;         // of the tile's values
      ActT* const rk = raw;  // bf16: [kC][Dk] keys, [kC][Dk] queries, [kC][Tile] values
      ActT* const rq = rk + kC * Dk;
      ActT* const rv = rq + kC * Dk;
      for (int e = rank; e < n * kW; e += kThreads) {
        const int j = e / kW, w = kE * (e % kW);
        if constexpr (kFloat) {
          async_copy<16>(s.k + Scratch::at(j, w), &x(t + j, kc + w));
          async_copy<16>(s.q + Scratch::at(j, w), &x(t + j, qc + w));
        } else {
          async_copy<16>(rk + kE * e, &x(t + j, kc + w));
          async_copy<16>(rq + kE * e, &x(t + j, qc + w));
        }
      }
      for (int e = rank; e < n * kVW; e += kThreads) {
        const int j = e / kVW, w = kE * (e % kVW);
        async_copy<16>(kFloat ? static_cast<void*>(s.v + kE * e) : static_cast<void*>(rv + kE * e),
                       &x(t + j, vc + w));
      }
    } else {
      for (int e = rank; e < n * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        stage_value(s.k + Scratch::at(j, i), &x(t + j, kc + i));
        stage_value(s.q + Scratch::at(j, i), &x(t + j, qc + i));
      }
      for (int e = rank; e < n * Tile; e += kThreads) {
        const int j = e / Tile, c = e % Tile;
        stage_value(s.v + e, &x(t + j, vc + c));
      }
    }
    if (m.coef.data() != nullptr) {
      stage_coefficients(rank, s, t, n, h);
    } else if constexpr (kFloat) {
      for (int j = rank; j < n; j += kThreads) {
        if (!m.in.m_raw_gates) {
          stage_value(s.a + j, &m.in.m_gate(t + j, h));
          stage_value(s.beta + j, &m.in.m_beta(t + j, h));
        } else {
          s.a[j] = m.in.decay(t + j, h);
          s.beta[j] = m.in.beta(t + j, h);
        }
      }
    } else {  // every load of a thread first, then the math
      float ga[kGateSteps] = {}, gb[kGateSteps] = {};
      float A_log = 0.0f, dt_bias = 0.0f;
      GDN_UNROLL
      for (int i = 0; i < kGateSteps; ++i) {
        const int j = rank + i * kThreads;
        if (j < n) {
          ga[i] = m.in.gate_input(t + j, h);
          gb[i] = m.in.beta_input(t + j, h);
        }
      }
      if (m.in.m_raw_gates && rank < n) {
        A_log = m.in.m_A_log(h);
        dt_bias = m.in.m_dt_bias(h);
      }
      GDN_UNROLL
      for (int i = 0; i < kGateSteps; ++i) {
        const int j = rank + i * kThreads;
        if (j < n) {
          s.a[j] = m.in.decay_of(ga[i], A_log, dt_bias);
          s.beta[j] = m.in.beta_of(gb[i]);
        }
      }
    }
    async_wait();
    if constexpr (!kFloat) {
      if (m.vec_qkv) widen(rank, s, raw, n);
    }
  }

  /// The parallel pass's records of tokens t .. t+n-1, head h (coef_kernel.hpp)
  /// into scratch by async copies: rows j of akk and akq (16-byte words),
  /// then the decay, beta, kinv, qf and Gam of each token.
  KOKKOS_INLINE_FUNCTION void stage_coefficients(int rank, const Scratch& s, int t, int n,
                                                 int h) const {
    constexpr int kRowWords = kC / 4;  // 16-byte words of one coefficient row
    const float* const rec = &m.coef(h, t, 0);
    for (int e = rank; e < 2 * n * kRowWords; e += kThreads) {
      const int j = e / (2 * kRowWords), w = 4 * (e % (2 * kRowWords));  // w < kC: akk
      float* const dst = w < kC ? s.akk + j * kC + w : s.akq + j * kC + (w - kC);
      async_copy<16>(dst, rec + j * CoefRecord::kFloats + CoefRecord::kAkk + w);
    }
    static_assert(CoefRecord::kScalars == 5, "decay, beta, kinv, qf, Gam");
    for (int e = rank; e < n * CoefRecord::kScalars; e += kThreads) {
      const int j = e / CoefRecord::kScalars, f = e % CoefRecord::kScalars;
      float* const dst = f == 0 ? s.a : f == 1 ? s.beta : f == 2 ? s.kinv : f == 3 ? s.qf : s.gam;
      async_copy<4>(dst + j, rec + j * CoefRecord::kFloats + CoefRecord::kDecay + f);
    }
  }

  /// bf16 staging: this thread's raw copies of k, q, v in `raw` (the words
  /// stage copied, complete after its async_wait) into their float places.
  KOKKOS_INLINE_FUNCTION void widen(int rank, const Scratch& s, const ActT* raw, int n) const {
    constexpr int kW = Dk / 8, kVW = Tile / 8;  // 8-value words
    const ActT* const rk = raw;
    const ActT* const rq = rk + kC * Dk;
    const ActT* const rv = rq + kC * Dk;
    float v8[8];
    for (int e = rank; e < n * kW; e += kThreads) {
      const int to = Scratch::at(e / kW, 8 * (e % kW));  // 8 values within one 16-row block
      load_frag<8>(rk + 8 * e, v8);
      store_frag<8>(s.k + to, v8);
      load_frag<8>(rq + 8 * e, v8);
      store_frag<8>(s.q + to, v8);
    }
    for (int e = rank; e < n * kVW; e += kThreads) {
      load_frag<8>(rv + 8 * e, v8);
      store_frag<8>(s.v + 8 * e, v8);
    }
  }

  /// One activation into scratch as a float: a float by an async copy, a
  /// bf16 widened through a register.
  KOKKOS_FORCEINLINE_FUNCTION static void stage_value(float* dst, const ActT* src) {
    if constexpr (std::is_same<ActT, float>::value) {
      async_copy<4>(dst, src);
    } else {
      *dst = to_float(*src);
    }
  }

  /// Hint the next chunk's keys, queries and the tile's values (tokens t ..
  /// t+n-1) into L2 while this chunk computes; only where qkv's rows are
  /// contiguous (m.vec_qkv).
  KOKKOS_INLINE_FUNCTION void prefetch_chunk(const Member& team, int t, int n, int h, int kh,
                                             int tcol) const {
    if (!m.vec_qkv) return;
    const auto& x = m.in.m_qkv;
    constexpr int kA = int(sizeof(ActT));
    const long row_bytes = long(x.stride(0)) * kA;
    const long qc = long(kh) * Dk;
    prefetch_tile_l2(&x(t, qc), n, Dk * kA, row_bytes, team.team_rank(), kThreads);
    prefetch_tile_l2(&x(t, m.key_dim + qc), n, Dk * kA, row_bytes, team.team_rank(), kThreads);
    prefetch_tile_l2(&x(t, 2 * m.key_dim + long(h) * Dk + tcol), n, Tile * kA, row_bytes,
                     team.team_rank(), kThreads);
  }

  /// Records of positions c0 .. c0+n-1: the key (by the key head's first
  /// value head, tile 0) and this head's decay (tile 0).
  KOKKOS_INLINE_FUNCTION void write_key_records(const Member& team, const Scratch& s, int row,
                                                int c0, int n, int kh, int g, int tile) const {
    if (tile != 0) return;
    const int rank = team.team_rank();
    if (g == 0) {
      for (int e = rank; e < n * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        m.ring(row, kh, c0 + j, RingLayout{Dk, Dk, m.group}.key_offset() + i) =
            RingT(s.k[Scratch::at(j, i)]);
      }
    }
    const int aoff = RingLayout{Dk, Dk, m.group}.decay_offset(g);
    for (int j = rank; j < n; j += kThreads) m.ring(row, kh, c0 + j, aoff) = RingT(s.a[j]);
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_RECURRENCE_KERNEL_HPP
