// Index views in any layout: every index argument of the forward, verify and
// fold (row_offsets, state_slots, ring_slots, state_rows, ring_rows,
// num_accepted) passed as LayoutLeft, LayoutRight or LayoutStride (unit and
// non-unit strides, const and non-const) gives bit for bit the results of the
// default-layout call. Only the public API is used; the suite compiles this
// file for every backend, so a layout one backend rejects fails the build.
#include "test_support.hpp"

namespace gdn_test {
namespace {

// How the index arguments of one call are laid out.
enum class IndexLayout { Left, Right, Stride, StridedGap };

const char* name_of(IndexLayout l) {
  switch (l) {
    case IndexLayout::Left:
      return "LayoutLeft";
    case IndexLayout::Right:
      return "LayoutRight";
    case IndexLayout::Stride:
      return "LayoutStride (dense)";
    default:
      return "LayoutStride (gaps)";
  }
}

constexpr std::uint32_t kPoisonIndex = 0xfffffff0u;  // out of range as any row or offset

template <class IdxLayout>
using Index1 = Kokkos::View<std::uint32_t*, IdxLayout, Mem>;  // [B] or [B+1]
template <class IdxLayout>
using Index2 = Kokkos::View<std::uint32_t**, IdxLayout, Mem>;  // [L, B]

// A 1-D index view of the given layout holding v; `gap` > 1 spaces the entries
// that far apart in a buffer whose other elements hold kPoisonIndex.
template <class IdxLayout>
Index1<IdxLayout> index_1d(const std::vector<std::uint32_t>& v, std::size_t gap,
                           Kokkos::View<std::uint32_t*, Mem>& keep) {
  const std::size_t n = v.size();
  keep = Kokkos::View<std::uint32_t*, Mem>("gdn_test::index_buf", n ? (n - 1) * gap + 1 : 1);
  auto h = Kokkos::create_mirror(keep);
  for (std::size_t i = 0; i < h.extent(0); ++i) h(i) = kPoisonIndex;
  for (std::size_t i = 0; i < n; ++i) h(i * gap) = v[i];
  Kokkos::deep_copy(keep, h);
  if constexpr (std::is_same<IdxLayout, Kokkos::LayoutStride>::value) {
    return Index1<IdxLayout>(keep.data(), Kokkos::LayoutStride(n, gap));
  } else {
    EXPECT_EQ(gap, 1u);
    return Index1<IdxLayout>(keep.data(), n);
  }
}

// A 2-D [rows, cols] index view holding the row-major v; for LayoutStride,
// element (i, j) sits at i * s0 + j * s1 (any strides, gaps poisoned).
template <class IdxLayout>
Index2<IdxLayout> index_2d(std::size_t rows, std::size_t cols, const std::vector<std::uint32_t>& v,
                           std::size_t s0, std::size_t s1,
                           Kokkos::View<std::uint32_t*, Mem>& keep) {
  const bool left = std::is_same<IdxLayout, Kokkos::LayoutLeft>::value;
  const bool right = std::is_same<IdxLayout, Kokkos::LayoutRight>::value;
  if (left) {
    s0 = 1;
    s1 = rows;
  } else if (right) {
    s0 = cols;
    s1 = 1;
  }
  const std::size_t span = (rows && cols) ? (rows - 1) * s0 + (cols - 1) * s1 + 1 : 1;
  keep = Kokkos::View<std::uint32_t*, Mem>("gdn_test::table_buf", span);
  auto h = Kokkos::create_mirror(keep);
  for (std::size_t i = 0; i < span; ++i) h(i) = kPoisonIndex;
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) h(i * s0 + j * s1) = v[i * cols + j];
  Kokkos::deep_copy(keep, h);
  if constexpr (std::is_same<IdxLayout, Kokkos::LayoutStride>::value) {
    return Index2<IdxLayout>(keep.data(), Kokkos::LayoutStride(rows, s0, cols, s1));
  } else {
    return Index2<IdxLayout>(keep.data(), rows, cols);
  }
}

// One layer's calls and their results, as raw bytes.
struct Results {
  std::vector<unsigned char> fwd_out, fwd_state;
  std::vector<unsigned char> ver_out, ver_state, ver_ring;
  std::vector<unsigned char> fold_state;
};

// The fixed problem: B = 5 rows (one empty, one longer than RING_LEN, so
// verify both records and commits), pool rows and ring rows permuted, and a
// fold of L = 2 layers whose [L, B] tables are not symmetric, so reading a
// table in the wrong order reads other rows.
struct Fixture {
  gdn::HeadConfig cfg = heads(2, 4, 64);
  int ring_len = 4;
  Problem p;
  std::vector<std::uint32_t> slots, ring_slots;      // [B]
  std::vector<std::uint32_t> state_rows, ring_rows;  // [L, B] row-major
  std::vector<std::uint32_t> accepted;               // [B]
  int layers = 2, pool_rows = 12, ring_pool_rows = 10;
  Pool<float> state0, ring0;  // the initial state pool; the ring the fold reads
  DeviceInputs dev;

  Fixture() {
    p = make_problem(cfg, {3, 0, 4, 7, 1}, 4242);
    slots = {7, 2, 9, 0, 5};
    ring_slots = {3, 8, 0, 6, 1};
    const int B = p.batch();
    // Layer l, row b: distinct pool rows for every (l, b) (the fold writes them all).
    state_rows = {1, 4, 6, 11, 3, 8, 10, 0, 2, 9};
    ring_rows = {3, 8, 0, 6, 1, 9, 2, 7, 4, 5};
    // The empty row 1 and row 3 (longer than RING_LEN: verify committed it)
    // have no records and fold nothing; row 2 folds a whole window.
    accepted = {2, 0, 4, 0, 1};
    EXPECT_EQ(int(state_rows.size()), layers * B);
    state0 = make_state<float>(pool_rows, cfg, 99);
    const int stride =
        int(gdn::ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size()));
    ring0 = make_ring<float>(ring_pool_rows, cfg, ring_len, stride);
    dev = upload(p);
    // Records for every ring row the fold reads: a verify of the same tokens
    // into ring rows ring_rows(l, .), layer by layer, default layouts.
    for (int l = 0; l < layers; ++l) {
      const Pool<float> scratch = clone(state0);
      const Strided2D out = make_out(p);
      const std::vector<std::uint32_t> rr(ring_rows.begin() + l * B,
                                          ring_rows.begin() + (l + 1) * B);
      gdn::recurrence_verify_ring(ExecSpace(), cfg, dev.in, to_device(slots), scratch, out.view,
                                  to_device(rr), ring0);
    }
    ExecSpace().fence();
  }
};

// The three calls with index views built by `make1` ([B] or [B+1]) and
// `make2` ([L, B]); `checking` also runs them in the index checking mode,
// which reads the indices back to the host.
template <class Make1, class Make2>
Results run_calls(const Fixture& s, Make1 make1, Make2 make2, bool checking = false) {
  struct CheckingGuard {  // the mode is global: off again whatever happens
    explicit CheckingGuard(bool on) { gdn::set_index_checking(on); }
    ~CheckingGuard() { gdn::set_index_checking(false); }
  } guard(checking);
  Results r;
  const ExecSpace space;
  gdn::TokenInputs<Mem> in = s.dev.in;
  std::vector<Kokkos::View<std::uint32_t*, Mem>> keep(6);
  in.row_offsets = make1(s.p.offsets, keep[0]);
  {
    const Pool<float> state = clone(s.state0);
    const Strided2D out = make_out(s.p);
    gdn::recurrence_fwd(space, s.cfg, in, make1(s.slots, keep[1]), state, out.view);
    space.fence();
    r.fwd_out = bytes_of(out.buf);
    r.fwd_state = bytes_of(state);
  }
  {
    const Pool<float> state = clone(s.state0);
    const Pool<float> ring = clone(s.ring0);
    const Strided2D out = make_out(s.p);
    gdn::recurrence_verify_ring(space, s.cfg, in, make1(s.slots, keep[1]), state, out.view,
                                make1(s.ring_slots, keep[2]), ring);
    space.fence();
    r.ver_out = bytes_of(out.buf);
    r.ver_state = bytes_of(state);
    r.ver_ring = bytes_of(ring);
  }
  {
    const Pool<float> state = clone(s.state0);
    gdn::state_fold(space, s.cfg, make2(s.state_rows, keep[3]), state, make2(s.ring_rows, keep[4]),
                    s.ring0, make1(s.accepted, keep[5]));
    space.fence();
    r.fold_state = bytes_of(state);
  }
  return r;
}

void expect_same(const Results& want, const Results& got) {
  EXPECT_TRUE(same_bytes(want.fwd_out, got.fwd_out)) << "recurrence_fwd: out";
  EXPECT_TRUE(same_bytes(want.fwd_state, got.fwd_state)) << "recurrence_fwd: state";
  EXPECT_TRUE(same_bytes(want.ver_out, got.ver_out)) << "recurrence_verify_ring: out";
  EXPECT_TRUE(same_bytes(want.ver_state, got.ver_state)) << "recurrence_verify_ring: state";
  EXPECT_TRUE(same_bytes(want.ver_ring, got.ver_ring)) << "recurrence_verify_ring: ring";
  EXPECT_TRUE(same_bytes(want.fold_state, got.fold_state)) << "state_fold: state";
}

// The default-layout call: Kokkos::View<std::uint32_t*, Mem> and <std::uint32_t**, Mem>.
Results default_results(const Fixture& s) {
  const std::size_t L = s.layers, B = s.p.batch();
  return run_calls(
      s,
      [](const std::vector<std::uint32_t>& v, Kokkos::View<std::uint32_t*, Mem>&) {
        return to_device(v);
      },
      [L, B](const std::vector<std::uint32_t>& v, Kokkos::View<std::uint32_t*, Mem>&) {
        return to_device(L, B, v);
      });
}

template <class IdxLayout>
Results layout_results(const Fixture& s, std::size_t gap, bool as_const, bool checking) {
  const std::size_t L = s.layers, B = s.p.batch();
  // Strides of the [L, B] tables in LayoutStride: with gaps, neither is 1 nor
  // the extent of the other (a column-major order with padding).
  const std::size_t s0 = gap > 1 ? gap : B, s1 = gap > 1 ? gap * L + 1 : 1;
  auto make1 = [gap, as_const](const std::vector<std::uint32_t>& v,
                               Kokkos::View<std::uint32_t*, Mem>& keep) {
    const Index1<IdxLayout> d = index_1d<IdxLayout>(v, gap, keep);
    return Kokkos::View<const std::uint32_t*, IdxLayout, Mem>(d);
  };
  auto make1_mut = [gap](const std::vector<std::uint32_t>& v,
                         Kokkos::View<std::uint32_t*, Mem>& keep) {
    return index_1d<IdxLayout>(v, gap, keep);
  };
  auto make2 = [L, B, s0, s1](const std::vector<std::uint32_t>& v,
                              Kokkos::View<std::uint32_t*, Mem>& keep) {
    return Kokkos::View<const std::uint32_t**, IdxLayout, Mem>(
        index_2d<IdxLayout>(L, B, v, s0, s1, keep));
  };
  auto make2_mut = [L, B, s0, s1](const std::vector<std::uint32_t>& v,
                                  Kokkos::View<std::uint32_t*, Mem>& keep) {
    return index_2d<IdxLayout>(L, B, v, s0, s1, keep);
  };
  return as_const ? run_calls(s, make1, make2, checking)
                  : run_calls(s, make1_mut, make2_mut, checking);
}

TEST(IndexLayouts, EveryLayoutGivesTheDefaultLayoutResults) {
  const Fixture s;
  const Results want = default_results(s);
  // The problem is not trivial: the forward and verify wrote outputs, the fold changed the state.
  ASSERT_FALSE(same_bytes(bytes_of(s.state0), want.fold_state));
  for (bool as_const : {false, true}) {
    for (bool checking : {false, true}) {
      SCOPED_TRACE(std::string(as_const ? "const" : "non-const") +
                   (checking ? ", index checking on" : ""));
      {
        SCOPED_TRACE(name_of(IndexLayout::Left));
        expect_same(want, layout_results<Kokkos::LayoutLeft>(s, 1, as_const, checking));
      }
      {
        SCOPED_TRACE(name_of(IndexLayout::Right));
        expect_same(want, layout_results<Kokkos::LayoutRight>(s, 1, as_const, checking));
      }
      {
        SCOPED_TRACE(name_of(IndexLayout::Stride));
        expect_same(want, layout_results<Kokkos::LayoutStride>(s, 1, as_const, checking));
      }
      {
        SCOPED_TRACE(name_of(IndexLayout::StridedGap));
        expect_same(want, layout_results<Kokkos::LayoutStride>(s, 3, as_const, checking));
      }
    }
  }
}

// Each argument with a layout of its own in one call (the arguments are
// independent template parameters), including subviews of a wider table.
TEST(IndexLayouts, MixedLayoutsAndSubviewsInOneCall) {
  const Fixture s;
  const Results want = default_results(s);
  const ExecSpace space;
  const std::size_t L = s.layers, B = s.p.batch();
  Kokkos::View<std::uint32_t*, Mem> k0, k1, k2, k3, k4, k5;  // the buffers behind the views
  // row_offsets: a column of a [B+1, 2] LayoutRight table (a stride-2 LayoutStride subview).
  std::vector<std::uint32_t> two_cols;
  for (std::uint32_t o : s.p.offsets) {
    two_cols.push_back(o);
    two_cols.push_back(kPoisonIndex);
  }
  const auto offsets_table = index_2d<Kokkos::LayoutRight>(B + 1, 2, two_cols, 0, 0, k0);
  gdn::TokenInputs<Mem> in = s.dev.in;
  in.row_offsets = Kokkos::subview(offsets_table, Kokkos::ALL, 0);
  const auto slots = index_1d<Kokkos::LayoutLeft>(s.slots, 1, k1);
  const auto ring_slots = index_1d<Kokkos::LayoutStride>(s.ring_slots, 2, k2);
  Results got;
  {
    const Pool<float> state = clone(s.state0);
    const Strided2D out = make_out(s.p);
    gdn::recurrence_fwd(space, s.cfg, in, slots, state, out.view);
    space.fence();
    got.fwd_out = bytes_of(out.buf);
    got.fwd_state = bytes_of(state);
  }
  {
    const Pool<float> state = clone(s.state0);
    const Pool<float> ring = clone(s.ring0);
    const Strided2D out = make_out(s.p);
    gdn::recurrence_verify_ring(space, s.cfg, in, slots, state, out.view, ring_slots, ring);
    space.fence();
    got.ver_out = bytes_of(out.buf);
    got.ver_state = bytes_of(state);
    got.ver_ring = bytes_of(ring);
  }
  {
    // state_rows LayoutLeft; ring_rows the [L, B] rows 1..L of an [L+1, B] LayoutRight
    // table (a subview); num_accepted a row of an [2, B] LayoutLeft table (stride 2).
    const auto state_rows = index_2d<Kokkos::LayoutLeft>(L, B, s.state_rows, 0, 0, k3);
    std::vector<std::uint32_t> wide(B, kPoisonIndex);
    wide.insert(wide.end(), s.ring_rows.begin(), s.ring_rows.end());
    const auto ring_table = index_2d<Kokkos::LayoutRight>(L + 1, B, wide, 0, 0, k4);
    const auto ring_rows =
        Kokkos::subview(ring_table, std::make_pair(std::size_t(1), L + 1), Kokkos::ALL);
    std::vector<std::uint32_t> acc2(s.accepted);
    acc2.insert(acc2.end(), B, kPoisonIndex);
    const auto acc_table = index_2d<Kokkos::LayoutLeft>(2, B, acc2, 0, 0, k5);
    const Pool<float> state = clone(s.state0);
    gdn::state_fold(space, s.cfg, state_rows, state, ring_rows, s.ring0,
                    Kokkos::subview(acc_table, 0, Kokkos::ALL));
    space.fence();
    got.fold_state = bytes_of(state);
  }
  expect_same(want, got);
}

}  // namespace
}  // namespace gdn_test
