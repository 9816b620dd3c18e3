#ifndef GDN_IMPL_VALIDATE_HPP
#define GDN_IMPL_VALIDATE_HPP

/// \file validate.hpp
/// \brief Host-side argument checks, run by every entry point before it launches anything.
///
/// Two levels: shape checks (always; they read only extents and the head
/// geometry) and index-content checks (only in the index checking mode,
/// checking.hpp; they copy the index views to the host). Both throw
/// `gdn::InvalidArgument` naming the function and the argument.

#include <gdn/checking.hpp>
#include <gdn/config.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/error.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gdn {
namespace Impl {

/// Whether `p` is aligned to `bytes`; aligned16: to the kernels' 16-byte loads and copies.
inline bool aligned_to(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}
inline bool aligned16(const void* p) { return aligned_to(p, 16); }

inline std::string to_str(long long v) { return std::to_string(v); }

template <class V>
std::string extents_str(const V& v) {
  std::string s = "[";
  for (unsigned r = 0; r < unsigned(V::rank); ++r) {
    if (r) s += ", ";
    s += std::to_string(v.extent(r));
  }
  return s + "]";
}

/// The function being checked; `fail` throws `InvalidArgument(function,
/// argument, expected, got)`. Checks read `if (!condition) c.fail(...)`, so
/// that the message strings are built only when a check fails: a valid call
/// formats no strings, which keeps its host-side cost small.
class ArgCheck {
 public:
  explicit ArgCheck(const char* function) : m_function(function) {}
  [[noreturn]] void fail(const char* argument, const std::string& expected,
                         const std::string& got) const {
    throw InvalidArgument(m_function, argument, expected, got);
  }
  const char* function() const { return m_function; }

 private:
  const char* m_function;
};

/// Head geometry: positive counts, nv % nk == 0, Dk == Dv in {64, 128}.
inline void check_heads(const ArgCheck& c, const HeadConfig& cfg) {
  if (!(cfg.num_key_heads > 0)) {
    c.fail("cfg.num_key_heads", "> 0", to_str(cfg.num_key_heads));
  }
  if (!(cfg.num_value_heads > 0)) {
    c.fail("cfg.num_value_heads", "> 0", to_str(cfg.num_value_heads));
  }
  if (!(cfg.num_value_heads % cfg.num_key_heads == 0)) {
    c.fail("cfg.num_value_heads", "a multiple of num_key_heads = " + to_str(cfg.num_key_heads),
           to_str(cfg.num_value_heads));
  }
  if (!(cfg.key_head_dim == 64 || cfg.key_head_dim == 128)) {
    c.fail("cfg.key_head_dim", "64 or 128 (the supported head dims)", to_str(cfg.key_head_dim));
  }
  if (!(cfg.value_head_dim == cfg.key_head_dim)) {
    c.fail("cfg.value_head_dim", "value_head_dim == key_head_dim = " + to_str(cfg.key_head_dim),
           to_str(cfg.value_head_dim));
  }
}

/// An [L, B] table `argument` whose B is num_accepted's.
template <class Table, class Index>
void check_table_batch(const ArgCheck& c, const char* argument, const Table& table,
                       const Index& num_accepted) {
  const std::size_t batch = num_accepted.extent(0);
  if (!(table.extent(1) == batch)) {
    c.fail(argument, "shape [L, B] with B = num_accepted.extent(0) = " + to_str(batch),
           "shape " + extents_str(table));
  }
}

/// The [L, B] table ring_rows of a fold or flush: the shape of state_rows.
template <class Table>
void check_ring_rows_table(const ArgCheck& c, const Table& state_rows, const Table& ring_rows) {
  const std::size_t layers = state_rows.extent(0), batch = state_rows.extent(1);
  if (!(ring_rows.extent(0) == layers && ring_rows.extent(1) == batch)) {
    c.fail(
        "ring_rows",
        "shape [L, B] = [" + to_str(layers) + ", " + to_str(batch) + "] (the shape of state_rows)",
        "shape " + extents_str(ring_rows));
  }
}

/// The fold's tables: state_rows and ring_rows [L, B] with B = num_accepted.extent(0).
template <class Table, class Index>
void check_fold_tables(const ArgCheck& c, const Table& state_rows, const Table& ring_rows,
                       const Index& num_accepted) {
  check_table_batch(c, "state_rows", state_rows, num_accepted);
  check_ring_rows_table(c, state_rows, ring_rows);
}

/// The work items of one launch (B x value heads x column tiles, times the
/// layers in the fold): at most INT_MAX / 2, so that the kernels' `item +
/// stride` (an item below the count plus at most the count) stays an int.
inline void check_league(const ArgCheck& c, const char* argument, long long league) {
  if (!(league <= INT_MAX / 2)) {
    c.fail(argument,
           "a problem small enough for one launch (at most " + to_str(INT_MAX / 2) + " work items)",
           to_str(league) + " work items");
  }
}

/// A per-token, per-value-head input (`decay`, `beta`, `a`, `b`): at least [tokens, nv].
template <class V>
void check_token_heads(const ArgCheck& c, const char* argument, const V& v, std::size_t tokens,
                       int nv) {
  if (!(v.extent(0) >= tokens && v.extent(1) >= std::size_t(nv))) {
    c.fail(argument,
           "shape >= [tokens, nv] = [" + to_str(tokens) + ", " + to_str(nv) +
               "] (tokens = qkv.extent(0))",
           "shape " + extents_str(v));
  }
}

/// The offsets and qkv of either input form against the batch size B;
/// returns the token count (qkv.extent(0)).
template <class Inputs>
std::size_t check_offsets_and_qkv(const ArgCheck& c, const HeadConfig& cfg, const Inputs& in,
                                  std::size_t batch) {
  if (!(in.row_offsets.extent(0) == batch + 1)) {
    c.fail("inputs.row_offsets",
           "extent(0) == B + 1 = " + to_str(batch + 1) + " (B = state_slots.extent(0))",
           "extent(0) = " + to_str(in.row_offsets.extent(0)));
  }
  if (!(in.qkv.extent(1) >= std::size_t(cfg.conv_dim()))) {
    c.fail("inputs.qkv", "extent(1) >= conv_dim = 2*nk*Dk + nv*Dv = " + to_str(cfg.conv_dim()),
           "shape " + extents_str(in.qkv));
  }
  return in.qkv.extent(0);
}

/// The per-token inputs against the batch size B; returns the token count (qkv.extent(0)).
template <class M, class ActT>
std::size_t check_inputs(const ArgCheck& c, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
                         std::size_t batch) {
  const std::size_t tokens = check_offsets_and_qkv(c, cfg, in, batch);
  check_token_heads(c, "inputs.decay", in.decay, tokens, cfg.num_value_heads);
  check_token_heads(c, "inputs.beta", in.beta, tokens, cfg.num_value_heads);
  return tokens;
}

/// The raw-gate inputs against the batch size B; returns the token count (qkv.extent(0)).
template <class M, class ActT>
std::size_t check_inputs(const ArgCheck& c, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
                         std::size_t batch) {
  const std::size_t tokens = check_offsets_and_qkv(c, cfg, in, batch);
  check_token_heads(c, "inputs.a", in.a, tokens, cfg.num_value_heads);
  check_token_heads(c, "inputs.b", in.b, tokens, cfg.num_value_heads);
  if (!(in.A_log.extent(0) >= std::size_t(cfg.num_value_heads))) {
    c.fail("inputs.A_log", "extent(0) >= nv = " + to_str(cfg.num_value_heads),
           "extent(0) = " + to_str(in.A_log.extent(0)));
  }
  if (!(in.dt_bias.extent(0) >= std::size_t(cfg.num_value_heads))) {
    c.fail("inputs.dt_bias", "extent(0) >= nv = " + to_str(cfg.num_value_heads),
           "extent(0) = " + to_str(in.dt_bias.extent(0)));
  }
  return tokens;
}

template <class StateView>
void check_state(const ArgCheck& c, const HeadConfig& cfg, const StateView& state, bool need_rows) {
  const bool ok = state.extent(1) == std::size_t(cfg.num_value_heads) &&
                  state.extent(2) == std::size_t(cfg.key_head_dim) &&
                  state.extent(3) == std::size_t(cfg.value_head_dim);
  if (!ok) {
    c.fail("state",
           "shape [slots, nv, Dk, Dv] = [slots, " + to_str(cfg.num_value_heads) + ", " +
               to_str(cfg.key_head_dim) + ", " + to_str(cfg.value_head_dim) + "]",
           "shape " + extents_str(state));
  }
  if (!(!need_rows || state.extent(0) > 0)) {
    c.fail("state", "at least one pool row (slots >= 1)", "shape " + extents_str(state));
  }
  if (!(state.size() == 0 || aligned16(state.data()))) {
    c.fail("state", "data() aligned to 16 bytes (the kernels use 16-byte loads)",
           "a misaligned pointer");
  }
}

template <class OutView>
void check_out(const ArgCheck& c, const HeadConfig& cfg, const OutView& out, std::size_t tokens) {
  if (!(out.extent(0) >= tokens && out.extent(1) >= std::size_t(cfg.value_dim()))) {
    c.fail("out",
           "shape >= [tokens, value_dim] = [" + to_str(tokens) + ", " + to_str(cfg.value_dim()) +
               "] (tokens = qkv.extent(0))",
           "shape " + extents_str(out));
  }
}

/// A ring pool [ring_rows, nk, RING_LEN, record_stride], or (`name`
/// "lazy.history") a lazy ring's history, whose extent(2) is its capacity.
template <class RingView>
void check_ring(const ArgCheck& c, const HeadConfig& cfg, const RingView& ring, bool need_rows,
                const char* name = "ring") {
  const std::size_t rec =
      ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size());
  const auto len_name = [&] {
    return std::string(std::string(name) == "ring" ? "RING_LEN" : "capacity");
  };
  if (!(ring.extent(1) == std::size_t(cfg.num_key_heads))) {
    c.fail(name,
           "extent(1) == nk = " + to_str(cfg.num_key_heads) + " (shape [ring_rows, nk, " +
               len_name() + ", record_stride])",
           "shape " + extents_str(ring));
  }
  if (!(ring.extent(2) >= 1)) {
    c.fail(name, len_name() + " = extent(2) >= 1", "shape " + extents_str(ring));
  }
  if (!(ring.extent(2) <= std::size_t(INT_MAX))) {
    c.fail(name, len_name() + " = extent(2) <= INT_MAX", "shape " + extents_str(ring));
  }
  if (!(ring.extent(3) >= rec)) {
    c.fail(name, "record_stride = extent(3) >= ring_record_elements(Dk, Dv, G) = " + to_str(rec),
           "shape " + extents_str(ring));
  }
  if (!(!need_rows || ring.extent(0) > 0)) {
    c.fail(name, "at least one ring row", "shape " + extents_str(ring));
  }
}

/// A verify's ring_slots: one entry per row.
template <class Index>
void check_ring_slots(const ArgCheck& c, const Index& ring_slots, std::size_t batch) {
  if (!(ring_slots.extent(0) == batch)) {
    c.fail("ring_slots", "extent(0) == B = " + to_str(batch) + " (state_slots.extent(0))",
           "extent(0) = " + to_str(ring_slots.extent(0)));
  }
}

/// A lazy ring's ledger against its history of `history_rows` rows of
/// `capacity` records: a row per history row, at least
/// lazy_ledger_words(capacity) words; the capacity at least one record.
template <class LedgerT>
void check_ledger(const ArgCheck& c, const LedgerT& ledger, std::size_t history_rows,
                  std::size_t capacity) {
  if (!(capacity >= 1 && capacity <= std::size_t(INT_MAX))) {
    c.fail("lazy.history", "capacity = extent(2) in [1, INT_MAX]", "capacity " + to_str(capacity));
  }
  const std::size_t words = 1 + (capacity + 31) / 32;
  if (!(ledger.extent(0) == history_rows && ledger.extent(1) >= words)) {
    c.fail("lazy.ledger",
           "shape [ring_rows, >= lazy_ledger_words(capacity)] = [" + to_str(history_rows) +
               ", >= " + to_str(words) + "] (lazy.history's rows and capacity)",
           "shape " + extents_str(ledger));
  }
}

// ---------------------------------------------------------------------------
// Index checking mode: validate device-resident index contents on the host.

// The index views are LayoutStride and may be strided: a deep_copy between
// memory spaces needs contiguous views, so the indices are first gathered into
// a dense view in their own space (a copy Kokkos runs in that space).
template <class V>
std::vector<std::uint32_t> host_copy_1d(const V& v) {
  Kokkos::View<std::uint32_t*, Kokkos::LayoutRight, typename V::memory_space> dense(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gdn::index_copy"), v.extent(0));
  Kokkos::deep_copy(dense, v);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dense);
  std::vector<std::uint32_t> r(v.extent(0));
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = h(i);
  return r;
}

template <class V>
std::vector<std::uint32_t> host_copy_2d(const V& v) {  // row-major copy
  Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, typename V::memory_space> dense(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gdn::index_copy"), v.extent(0), v.extent(1));
  Kokkos::deep_copy(dense, v);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dense);
  std::vector<std::uint32_t> r(v.extent(0) * v.extent(1));
  for (std::size_t i = 0; i < v.extent(0); ++i)
    for (std::size_t j = 0; j < v.extent(1); ++j) r[i * v.extent(1) + j] = h(i, j);
  return r;
}

/// A 1-D float view's first `n` values on the host (gathered densely first, as above).
template <class V>
std::vector<float> host_copy_floats(const V& v, std::size_t n) {
  const auto head = Kokkos::subview(v, std::make_pair(std::size_t(0), n));
  Kokkos::View<float*, Kokkos::LayoutRight, typename V::memory_space> dense(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gdn::param_copy"), n);
  Kokkos::deep_copy(dense, head);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dense);
  std::vector<float> r(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = h(i);
  return r;
}

inline std::string at(const char* name, std::size_t i) {
  return std::string(name) + "[" + to_str(i) + "]";
}

/// offsets: [0] == 0, non-decreasing, last <= tokens.
inline void check_offsets_contents(const ArgCheck& c, const std::vector<std::uint32_t>& off,
                                   std::size_t tokens) {
  if (!(off[0] == 0)) {
    c.fail("inputs.row_offsets", "row_offsets[0] == 0", "row_offsets[0] = " + to_str(off[0]));
  }
  for (std::size_t b = 1; b < off.size(); ++b) {
    if (!(off[b] >= off[b - 1])) {
      c.fail("inputs.row_offsets", "non-decreasing offsets",
             at("row_offsets", b) + " = " + to_str(off[b]) + " < " + at("row_offsets", b - 1) +
                 " = " + to_str(off[b - 1]));
    }
  }
  if (!(off.back() <= tokens)) {
    c.fail("inputs.row_offsets",
           "row_offsets[B] <= tokens = " + to_str(tokens) + " (qkv.extent(0))",
           at("row_offsets", off.size() - 1) + " = " + to_str(off.back()));
  }
}

/// What each row of a forward or verify call (recurrence or conv) does with
/// its indices, from their contents (the offsets checked first): `used`, it
/// reads its pool row; `record`, a verify row of at most RING_LEN tokens, it
/// writes its ring row and only reads the pool row; `commit`, it writes the
/// pool row. A padding row (gdn::pad_slot in either table) and an empty row
/// do nothing, as the kernels skip them.
struct RowRoles {
  std::vector<std::uint32_t> slots, ring_slots;
  std::vector<char> used, record, commit;
};

template <class ExecSpace, class Index>
RowRoles row_roles(const ArgCheck& c, const ExecSpace& space, const Index& offsets,
                   std::size_t tokens, const Index& slots, const Index* ring_slots,
                   std::size_t ring_len) {
  space.fence();  // the caller may have written the indices asynchronously on this instance
  const std::vector<std::uint32_t> off = host_copy_1d(offsets);
  check_offsets_contents(c, off, tokens);
  const std::size_t batch = slots.extent(0);
  RowRoles r;
  r.slots = host_copy_1d(slots);
  if (ring_slots) r.ring_slots = host_copy_1d(*ring_slots);
  r.used.assign(batch, 0);
  r.record.assign(batch, 0);
  r.commit.assign(batch, 0);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t len = off[b + 1] - off[b];
    const bool pad =
        r.slots[b] == pad_slot || (ring_slots != nullptr && r.ring_slots[b] == pad_slot);
    r.used[b] = len > 0 && !pad;
    r.record[b] = ring_slots != nullptr && r.used[b] && len <= ring_len;
    r.commit[b] = r.used[b] && !r.record[b];
  }
  return r;
}

inline std::string index_name(const char* argument, std::size_t e, std::size_t row_len) {
  return row_len
             ? std::string(argument) + "(" + to_str(e / row_len) + ", " + to_str(e % row_len) + ")"
             : at(argument, e);
}

/// Every entry e with used[e] must index below `limit`; an entry with
/// exclusive[e] (a row the call writes) must not share its row with any other
/// used entry (the two requests would race). `row_len` > 0 names 2-D entries.
/// The callers leave the entries of padding rows (gdn::pad_slot) unused: the
/// kernels skip those rows, so whatever they hold is never dereferenced.
inline void check_rows(const ArgCheck& c, const char* argument, const char* limit_name,
                       const std::vector<std::uint32_t>& idx, const std::vector<char>& used,
                       const std::vector<char>& exclusive, std::size_t limit, std::size_t row_len,
                       const char* what) {
  std::vector<std::size_t> users(limit, 0), first(limit, 0);
  for (std::size_t e = 0; e < idx.size(); ++e) {
    if (!used[e]) continue;
    if (!(idx[e] < limit)) {
      c.fail(argument,
             std::string(what) + " < " + limit_name + " = " + to_str(limit) +
                 ", or gdn::pad_slot = 0xFFFFFFFF (a padding row)",
             index_name(argument, e, row_len) + " = " + to_str(idx[e]));
    }
    if (users[idx[e]]++ == 0) first[idx[e]] = e;
  }
  for (std::size_t e = 0; e < idx.size(); ++e) {
    if (!used[e] || !exclusive[e] || users[idx[e]] < 2) continue;
    std::size_t other = first[idx[e]];
    if (other == e) {
      for (other = e + 1; !(used[other] && idx[other] == idx[e]); ++other) {
      }
    }
    c.fail(argument,
           std::string("a ") + what +
               " written by this call to be used by no other request of the call",
           index_name(argument, e, row_len) + " = " + to_str(idx[e]) + " is written, and " +
               index_name(argument, other, row_len) + " = " + to_str(idx[other]) + " uses it too");
  }
}

/// The checking mode's test of the pending counts: every ledger row that
/// `used[e]` names through `rows[e]` holds at most `capacity` records.
inline void check_pending(const ArgCheck& c, const std::vector<std::uint32_t>& ledger,
                          std::size_t words, const std::vector<std::uint32_t>& rows,
                          const std::vector<char>& used, std::size_t capacity,
                          const char* rows_name, std::size_t row_len) {
  for (std::size_t e = 0; e < rows.size(); ++e) {
    if (!used[e]) continue;
    const std::uint32_t pending = ledger[std::size_t(rows[e]) * words];
    if (!(pending <= capacity)) {
      c.fail("lazy.ledger",
             "pending records (word 0 of a row) <= capacity = " + to_str(capacity) +
                 " (lazy.history.extent(2))",
             "lazy.ledger(" + to_str(rows[e]) + ", 0) = " + to_str(pending) + " (the row of " +
                 index_name(rows_name, e, row_len) + ")");
    }
  }
}

/// Index checking mode: the per-head gate parameters of the heads in use are
/// finite (a NaN or infinite A_log or dt_bias would spread into every state of
/// the head). Given decay and beta (TokenInputs) have no parameters.
template <class M, class ActT>
void check_gate_params(const ArgCheck&, const HeadConfig&, const TokenInputs<M, ActT>&) {}

template <class M, class ActT>
void check_gate_params(const ArgCheck& c, const HeadConfig& cfg, const GateInputs<M, ActT>& in) {
  const std::size_t nv = std::size_t(cfg.num_value_heads);
  const std::vector<float> a_log = host_copy_floats(in.A_log, nv);
  const std::vector<float> dt_bias = host_copy_floats(in.dt_bias, nv);
  for (std::size_t h = 0; h < nv; ++h) {
    if (!std::isfinite(a_log[h])) {
      c.fail("inputs.A_log", "finite values", at("A_log", h) + " = " + std::to_string(a_log[h]));
    }
    if (!std::isfinite(dt_bias[h])) {
      c.fail("inputs.dt_bias", "finite values",
             at("dt_bias", h) + " = " + std::to_string(dt_bias[h]));
    }
  }
}

/// A conv state pool [slots, conv_dim, W-1] against conv_dim and the width W (of the weights).
template <class V>
void check_conv_state(const ArgCheck& c, const char* argument, long conv_dim, long width,
                      const char* width_from, const V& state, bool need_rows) {
  if (!(state.extent(1) == std::size_t(conv_dim) && state.extent(2) == std::size_t(width - 1))) {
    c.fail(argument,
           "shape [slots, conv_dim, W-1] = [slots, " + to_str(conv_dim) + ", " + to_str(width - 1) +
               "] (W = " + width_from + ")",
           "shape " + extents_str(state));
  }
  if (!(!need_rows || state.extent(0) > 0)) {
    c.fail(argument, "at least one pool row", "shape " + extents_str(state));
  }
}

/// A conv ring [ring_rows, RING_LEN, >= conv_dim].
template <class V>
void check_conv_ring(const ArgCheck& c, const char* argument, long conv_dim, const V& ring,
                     bool need_rows) {
  if (!(ring.extent(1) >= 1 && ring.extent(1) <= std::size_t(INT_MAX))) {
    c.fail(argument, "RING_LEN = extent(1) in [1, INT_MAX]", "shape " + extents_str(ring));
  }
  if (!(ring.extent(2) >= std::size_t(conv_dim))) {
    c.fail(argument, "extent(2) >= conv_dim = " + to_str(conv_dim), "shape " + extents_str(ring));
  }
  if (!(!need_rows || ring.extent(0) > 0)) {
    c.fail(argument, "at least one ring row", "shape " + extents_str(ring));
  }
}

/// The conv uses only conv_dim of the head geometry: positive counts and dims.
inline void check_conv_heads(const ArgCheck& c, const HeadConfig& cfg) {
  if (!(cfg.num_key_heads > 0)) c.fail("cfg.num_key_heads", "> 0", to_str(cfg.num_key_heads));
  if (!(cfg.num_value_heads > 0)) {
    c.fail("cfg.num_value_heads", "> 0", to_str(cfg.num_value_heads));
  }
  if (!(cfg.key_head_dim > 0)) c.fail("cfg.key_head_dim", "> 0", to_str(cfg.key_head_dim));
  if (!(cfg.value_head_dim > 0)) c.fail("cfg.value_head_dim", "> 0", to_str(cfg.value_head_dim));
  if (!(cfg.conv_dim() <= INT_MAX / 2)) {
    c.fail("cfg", "conv_dim = 2*nk*Dk + nv*Dv <= " + to_str(INT_MAX / 2), to_str(cfg.conv_dim()));
  }
}

/// Shape checks of conv1d_fwd and conv1d_verify_ring (inputs, conv state, out); returns W.
template <class Inputs, class StatePool, class Out>
int check_conv_call(const ArgCheck& c, const HeadConfig& cfg, const Inputs& in, std::size_t batch,
                    const StatePool& state, const Out& out) {
  check_conv_heads(c, cfg);
  const long cd = cfg.conv_dim();
  if (!(in.row_offsets.extent(0) == batch + 1)) {
    c.fail("inputs.row_offsets",
           "extent(0) == B + 1 = " + to_str(batch + 1) + " (B = state_slots.extent(0))",
           "extent(0) = " + to_str(in.row_offsets.extent(0)));
  }
  if (!(in.qkv.extent(1) >= std::size_t(cd))) {
    c.fail("inputs.qkv", "extent(1) >= conv_dim = 2*nk*Dk + nv*Dv = " + to_str(cd),
           "shape " + extents_str(in.qkv));
  }
  const long width = static_cast<long>(in.weight.extent(1));
  if (!(width >= conv_min_width && width <= conv_max_width)) {
    c.fail("inputs.weight",
           "W = extent(1) in [" + to_str(conv_min_width) + ", " + to_str(conv_max_width) + "]",
           "shape " + extents_str(in.weight));
  }
  if (!(in.weight.extent(0) >= std::size_t(cd))) {
    c.fail("inputs.weight", "extent(0) >= conv_dim = " + to_str(cd),
           "shape " + extents_str(in.weight));
  }
  if (!(in.bias.extent(0) == 0 || in.bias.extent(0) >= std::size_t(cd))) {
    c.fail("inputs.bias", "extent(0) == 0 (no bias) or >= conv_dim = " + to_str(cd),
           "shape " + extents_str(in.bias));
  }
  check_conv_state(c, "conv_state", cd, width, "inputs.weight.extent(1)", state, batch > 0);
  const std::size_t tokens = in.qkv.extent(0);
  if (!(out.extent(0) >= tokens && out.extent(1) >= std::size_t(cd))) {
    c.fail("out",
           "shape >= [tokens, conv_dim] = [" + to_str(tokens) + ", " + to_str(cd) +
               "] (tokens = qkv.extent(0))",
           "shape " + extents_str(out));
  }
  return static_cast<int>(width);
}

/// The conv pools of a `state_fold` call (a ConvFoldWords of conv_params.hpp,
/// any class with its `visit`): W from the conv state's shape, both pools'
/// shapes, RING_LEN that of the recurrent ring. Returns W.
template <class Conv>
int check_conv_fold(const ArgCheck& c, const HeadConfig& cfg, const Conv& conv,
                    std::size_t ring_len, bool any) {
  const long cd = cfg.conv_dim();
  int width = 0;
  conv.visit([&](const auto& state, const auto& ring) {
    width = static_cast<int>(state.extent(2)) + 1;
    if (!(width >= conv_min_width && width <= conv_max_width)) {
      c.fail("conv.conv_state",
             "shape [slots, conv_dim, W-1] with W in [" + to_str(conv_min_width) + ", " +
                 to_str(conv_max_width) + "]",
             "shape " + extents_str(state));
    }
    check_conv_state(c, "conv.conv_state", cd, width, "conv.conv_state.extent(2) + 1", state, any);
    check_conv_ring(c, "conv.conv_ring", cd, ring, any);
    if (!(ring.extent(1) == ring_len)) {
      c.fail("conv.conv_ring", "RING_LEN = extent(1) == ring.extent(2) = " + to_str(ring_len),
             "shape " + extents_str(ring));
    }
  });
  return width;
}

/// The names of a call's pools in the index checking mode's messages.
struct PoolNames {
  const char* state_extent;  // "state.extent(0)"
  const char* state_row;     // "pool row"
  const char* ring_extent;   // "ring.extent(0)"
  const char* ring_row;      // "ring row"
};

/// The pools' names of the recurrent calls, the conv calls and the lazy
/// verifies (their history rings).
inline constexpr PoolNames kRecurrencePools{"state.extent(0)", "pool row", "ring.extent(0)",
                                            "ring row"};
inline constexpr PoolNames kConvPools{"conv_state.extent(0)", "conv state row",
                                      "conv_ring.extent(0)", "conv ring row"};
inline constexpr PoolNames kLazyPools{"state.extent(0)", "pool row", "lazy.history.extent(0)",
                                      "history row"};
inline constexpr PoolNames kConvHistoryPools{"conv_state.extent(0)", "conv state row",
                                             "conv_history.extent(0)", "history row"};

/// Index checking mode of a forward or verify, recurrent or conv: the
/// offsets, the state rows (recording rows only read theirs, several may
/// share one; a committing row writes its row, so no other row of the call
/// may use it) and, for a verify (`ring_slots` not null), the ring rows.
template <class ExecSpace, class Index>
void check_call_indices(const ArgCheck& c, const ExecSpace& space, const Index& offsets,
                        std::size_t tokens, const Index& slots, std::size_t pool_rows,
                        const typename std::enable_if<true, Index>::type* ring_slots,
                        std::size_t ring_rows, std::size_t ring_len, const PoolNames& names) {
  const RowRoles r = row_roles(c, space, offsets, tokens, slots, ring_slots, ring_len);
  check_rows(c, "state_slots", names.state_extent, r.slots, r.used, r.commit, pool_rows, 0,
             names.state_row);
  if (ring_slots) {
    check_rows(c, "ring_slots", names.ring_extent, r.ring_slots, r.record, r.record, ring_rows, 0,
               names.ring_row);
  }
}

/// Index checking mode of a lazy verify, recurrent or conv: every row with
/// tokens fits the history (a longer row is an error here; without the
/// checking mode the verify commits it). Returns the rows' roles (row_roles).
template <class ExecSpace, class Index>
RowRoles check_lazy_rows(const ArgCheck& c, const ExecSpace& space, const Index& offsets,
                         std::size_t tokens, const Index& slots, const Index& ring_slots,
                         std::size_t capacity) {
  const RowRoles r = row_roles(c, space, offsets, tokens, slots, &ring_slots, capacity);
  for (std::size_t b = 0; b < r.used.size(); ++b) {
    if (r.commit[b]) {
      const std::vector<std::uint32_t> off = host_copy_1d(offsets);
      c.fail("lazy.history",
             "capacity = extent(2) >= the length of every row (a history holds a whole window)",
             "capacity " + to_str(capacity) + ", row " + to_str(b) + " of " +
                 to_str(off[b + 1] - off[b]) + " tokens");
    }
  }
  return r;
}

/// Index checking mode of a lazy verify, recurrent or conv: the offsets; every
/// row with tokens fits the history (check_lazy_rows); the state and history
/// rows of the rows with tokens are in range and each used by one row (a
/// slot's pending records belong to one request, and any row may store its
/// state); the pending counts are at most the capacity.
template <class ExecSpace, class Index, class LedgerT>
void check_lazy_verify_indices(const ArgCheck& c, const ExecSpace& space, const Index& offsets,
                               std::size_t tokens, const Index& slots, std::size_t pool_rows,
                               const Index& ring_slots, std::size_t history_rows,
                               std::size_t capacity, const LedgerT& ledger,
                               const PoolNames& names) {
  const RowRoles r = check_lazy_rows(c, space, offsets, tokens, slots, ring_slots, capacity);
  check_rows(c, "state_slots", names.state_extent, r.slots, r.used, r.used, pool_rows, 0,
             names.state_row);
  check_rows(c, "ring_slots", names.ring_extent, r.ring_slots, r.used, r.used, history_rows, 0,
             names.ring_row);
  check_pending(c, host_copy_2d(ledger), ledger.extent(1), r.ring_slots, r.used, capacity,
                "ring_slots", 0);
}

/// The shape checks forward, verify and the lazy verify share (heads,
/// inputs, state, out); returns the token count.
template <class Inputs, class StateView, class OutView>
std::size_t check_recurrence_shapes(const ArgCheck& c, const HeadConfig& cfg, const Inputs& in,
                                    std::size_t batch, const StateView& state, const OutView& out) {
  check_heads(c, cfg);
  const std::size_t tokens = check_inputs(c, cfg, in, batch);
  check_state(c, cfg, state, batch > 0);
  check_out(c, cfg, out, tokens);
  return tokens;
}

/// recurrence_verify_lazy's checks (`c` names the call): the shapes, the
/// history ring and its ledger, the leagues of the verify (`items`) and of
/// the commit before it (`commit_items`), and in the checking mode the
/// indices and the gate parameters.
template <class ExecSpace, class Inputs, class Index, class StatePool, class Out, class History,
          class LedgerT>
void check_verify_lazy(const ArgCheck& c, const ExecSpace& space, const HeadConfig& cfg,
                       const Inputs& in, const Index& state_slots, const StatePool& state,
                       const Out& out, const Index& ring_slots, const History& history,
                       const LedgerT& ledger, long long items, long long commit_items) {
  const std::size_t batch = state_slots.extent(0);
  const std::size_t tokens = check_recurrence_shapes(c, cfg, in, batch, state, out);
  check_ring_slots(c, ring_slots, batch);
  check_ring(c, cfg, history, batch > 0, "lazy.history");
  check_ledger(c, ledger, history.extent(0), history.extent(2));
  check_league(c, "state_slots", items);
  check_league(c, "state_slots", commit_items);
  if (index_checking_enabled()) {
    check_lazy_verify_indices(c, space, in.row_offsets, tokens, state_slots, state.extent(0),
                              ring_slots, history.extent(0), history.extent(2), ledger, kLazyPools);
    check_gate_params(c, cfg, in);
  }
}

/// conv1d_verify_lazy's checks (`c` names the call): the call's shapes, the
/// conv history (a row per ledger row, `capacity` inputs each) and its
/// ledger, and in the checking mode the indices. Returns W.
template <class ExecSpace, class Inputs, class Index, class StatePool, class Out, class LedgerT>
int check_conv_verify_lazy(const ArgCheck& c, const ExecSpace& space, const HeadConfig& cfg,
                           const Inputs& in, const Index& state_slots, const StatePool& conv_state,
                           const Out& out, const Index& ring_slots, const StatePool& conv_history,
                           std::size_t capacity, const LedgerT& ledger) {
  const std::size_t batch = state_slots.extent(0);
  const int width = check_conv_call(c, cfg, in, batch, conv_state, out);
  check_ring_slots(c, ring_slots, batch);
  check_ledger(c, ledger, ledger.extent(0), capacity);
  check_conv_ring(c, "conv_history", cfg.conv_dim(), conv_history, batch > 0);
  if (!(conv_history.extent(0) == ledger.extent(0) && conv_history.extent(1) == capacity)) {
    c.fail("conv_history",
           "shape [ring_rows, capacity, >= conv_dim] with ring_rows = " + to_str(ledger.extent(0)) +
               " and capacity = " + to_str(capacity) + " (lazy.history.extent(0) and extent(2))",
           "shape " + extents_str(conv_history));
  }
  if (index_checking_enabled()) {
    check_lazy_verify_indices(c, space, in.row_offsets, in.qkv.extent(0), state_slots,
                              conv_state.extent(0), ring_slots, conv_history.extent(0), capacity,
                              ledger, kConvHistoryPools);
  }
  return width;
}

/// The conv history of a flush against the lazy ring: a row per history row.
template <class Conv>
void check_conv_history_rows(const ArgCheck& c, const Conv& conv, std::size_t history_rows) {
  conv.visit([&](const auto&, const auto& conv_history) {
    if (!(conv_history.extent(0) == history_rows)) {
      c.fail("conv.conv_ring",
             "the conv history: extent(0) == ring_rows = " + to_str(history_rows) +
                 " (lazy.history.extent(0))",
             "shape " + extents_str(conv_history));
    }
  });
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_VALIDATE_HPP
