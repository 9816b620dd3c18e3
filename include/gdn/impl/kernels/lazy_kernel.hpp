#ifndef GDN_IMPL_LAZY_KERNEL_HPP
#define GDN_IMPL_LAZY_KERNEL_HPP

/// \file lazy_kernel.hpp
/// \brief Lazy commit (docs/design.md, "Lazy commit"): the ledger of a history
/// ring, the advance over a slot's pending records, and the small kernels
/// that move the ledger on the device.
///
/// The ledger `[ring_rows, lazy_ledger_words(capacity)]` (lazy_commit.hpp)
/// keeps, for history row r: in word 0 the count c of pending records
/// (records 0 .. c-1 of the row are accepted and not yet in the state); in
/// words 1.. one bit per record position, set where an accepted step ended.
/// A bf16 state of the eager flow is rounded after every step's fold; the
/// advance rounds its float fragment at the same records, so a lazy flow
/// computes from the same state values, bit for bit, for either state type.
///
/// A lazy verify is three launches: the fold kernel commits the pending
/// records of the rows whose window does not fit behind them (fold_kernel.hpp,
/// its verify mode), LedgerBeforeVerify clears those rows, then the verify
/// (kernels/token_kernel.hpp) folds each row's pending
/// records in registers and writes its window behind them. The commit is a
/// launch of its own because the teams of one head's value heads and tiles
/// read the pending records independently: a window written over them in the
/// same launch would race with those reads. Only the kernels here write the
/// ledger, each launched after the kernels that read it (stream order).
///
/// Thread mapping of the ledger kernels: one thread per (layer, row) entry of
/// their table.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/backend/backend.hpp>
#include <gdn/impl/launch/params.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

/// The pending records of a ledger row (word 0), at most `capacity`: a count
/// past the capacity (rejected in the checking mode) never makes a kernel
/// read past the history row.
KOKKOS_FORCEINLINE_FUNCTION int pending_records(std::uint32_t word0, int capacity) {
  return word0 < std::uint32_t(capacity) ? static_cast<int>(word0) : capacity;
}

/// Whether history record `p` of ledger row `row` is the last of an accepted step.
template <class LedgerT>
KOKKOS_FORCEINLINE_FUNCTION bool ends_step(const LedgerT& ledger, int row, int p) {
  return ((ledger(row, 1 + p / 32) >> (p % 32)) & 1u) != 0;
}

/// A float fragment rounded to the state's storage type, as a store and a
/// load would (a no-op for a float state).
template <class StateT, int R, int C>
KOKKOS_FORCEINLINE_FUNCTION void round_to_storage(float (&st)[R][C]) {
  if constexpr (!std::is_same<StateT, float>::value) {
    GDN_UNROLL
    for (int i = 0; i < R; ++i) {
      GDN_UNROLL
      for (int c = 0; c < C; ++c) st[i][c] = to_float(StateT(st[i][c]));
    }
  }
}

/// Folds staged history records 0 .. cnt-1 (positions p0 .. p0+cnt-1 of
/// ledger row `row`) into the fragment `st` in order: `fold(j, n)` applies
/// staged records j .. j+n-1. A bf16 state is rounded after every record that
/// ends a step (the eager flow stores it there); a float state needs no
/// rounding, and the fold runs the records in one sweep (the same
/// per-element operations, so the same bits).
template <class StateT, class LedgerT, class Fold, int R, int C>
KOKKOS_FORCEINLINE_FUNCTION void fold_steps(float (&st)[R][C], const LedgerT& ledger, int row,
                                            int p0, int cnt, const Fold& fold) {
  if constexpr (std::is_same<StateT, float>::value) {
    (void)ledger;
    (void)row;
    (void)p0;
    fold(0, cnt);
  } else {
    int j = 0;
    while (j < cnt) {
      int e = j;
      while (e + 1 < cnt && !ends_step(ledger, row, p0 + e)) ++e;
      fold(j, e - j + 1);
      if (ends_step(ledger, row, p0 + e)) round_to_storage<StateT>(st);
      j = e + 1;
    }
  }
}

/// One ring value into team scratch as a float: a float ring by an async
/// copy (completed by async_wait), a bf16 ring widened through a register.
template <class RingT>
KOKKOS_FORCEINLINE_FUNCTION void stage_ring_value(float* dst, const RingT* src) {
  if constexpr (std::is_same<RingT, float>::value) {
    async_copy<4>(dst, src);
  } else {
    *dst = to_float(*src);
  }
}

/// Clears ledger row `row` (no pending record, no step end).
template <class M>
KOKKOS_INLINE_FUNCTION void clear_ledger_row(const Ledger<M>& ledger, std::uint32_t row) {
  for (std::size_t w = 0; w < ledger.extent(1); ++w) ledger(row, w) = 0u;
}

/// Before a lazy verify, after its commit (the fold kernel in its verify
/// mode, fold_kernel.hpp): a row whose window does not fit behind its
/// pending records (or is longer than the capacity) had them committed, so
/// its ledger row is cleared and the verify writes the window from record 0.
/// The other rows keep their ledger: the window's records go behind the
/// pending ones, until lazy_accept takes them.
template <class ExecSpace>
struct LedgerBeforeVerify {
  using M = typename ExecSpace::memory_space;
  Ledger<M> ledger;
  IndexView<M> offsets;      // [B+1]
  IndexView<M> state_slots;  // [B]
  IndexView<M> ring_slots;   // [B]
  int capacity = 0;
  std::size_t pool_rows = 0;  // state.extent(0)
  std::size_t tokens = 0;     // qkv.extent(0)

  KOKKOS_INLINE_FUNCTION void operator()(int b) const {
    const std::uint32_t o0 = offsets(b), o1 = offsets(b + 1);
    const std::uint32_t len = o1 - o0;
    const std::uint32_t slot = state_slots(b), row = ring_slots(b);
    if (len == 0 || slot == pad_slot || row == pad_slot) return;
    // A row the verify skips for an index out of range keeps its ledger row.
    if (slot >= pool_rows || row >= ledger.extent(0) || o1 < o0 || o1 > tokens) return;
    const int c = pending_records(ledger(row, 0), capacity);
    if (len > std::uint32_t(capacity - c)) clear_ledger_row(ledger, row);
  }
};

/// lazy_accept: entry (l, b) moves ledger row `ring_rows(l, b)` past the
/// first `num_accepted[b]` records of the last window and marks the last of
/// them as a step's end. n == 0, a padding entry, or n past the capacity (a
/// row the verify committed) leaves the row as it is.
template <class ExecSpace>
struct LedgerAccept {
  using M = typename ExecSpace::memory_space;
  Ledger<M> ledger;
  IndexTable<M> ring_rows;  // [L, B]
  IndexView<M> accepted;    // [B]
  int capacity = 0;
  int batch = 0;

  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    const int l = e / batch, b = e % batch;
    const std::uint32_t row = ring_rows(l, b), n = accepted(b);
    if (row == pad_slot || n == 0 || row >= ledger.extent(0)) return;  // padding or out of range
    const int c = pending_records(ledger(row, 0), capacity);
    if (n > std::uint32_t(capacity - c)) return;
    const int last = c + static_cast<int>(n) - 1;
    ledger(row, 0) = std::uint32_t(last + 1);
    ledger(row, 1 + last / 32) |= 1u << (last % 32);
  }
};

/// state_flush (after its fold) and lazy_drop: clears ledger row
/// `ring_rows(l, b)` of every entry whose rows are not padding.
template <class ExecSpace>
struct LedgerClear {
  using M = typename ExecSpace::memory_space;
  Ledger<M> ledger;
  IndexTable<M> ring_rows;   // [L, B]
  IndexTable<M> state_rows;  // [L, B] (flush) or empty (drop)
  int batch = 0;
  std::size_t pool_rows = 0;  // the flush: state.extent(0), whose fold skipped rows beyond it

  KOKKOS_INLINE_FUNCTION void operator()(int e) const {
    const int l = e / batch, b = e % batch;
    const std::uint32_t row = ring_rows(l, b);
    if (row == pad_slot || row >= ledger.extent(0)) return;  // padding or out of range
    if (state_rows.extent(0) > 0 &&
        (state_rows(l, b) == pad_slot || state_rows(l, b) >= pool_rows)) {
      return;  // the flush did not commit this entry: its records stay pending
    }
    clear_ledger_row(ledger, row);
  }
};

/// Runs a ledger kernel over `count` entries on `space`.
template <class ExecSpace, class Kernel>
void launch_ledger(const char* label, const ExecSpace& space, long long count,
                   const Kernel& kernel) {
  if (count <= 0) return;
  Kokkos::parallel_for(label, Kokkos::RangePolicy<ExecSpace>(space, 0, static_cast<int>(count)),
                       kernel);
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_LAZY_KERNEL_HPP
