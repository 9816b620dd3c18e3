// gdn_launch_probe (CUDA builds only): where a fenced call's time goes
// outside its kernel. Fenced medians (`fence; timer; launch; fence`, 501
// samples after 50 warm-up calls) of empty launches: a Kokkos RangePolicy of
// one item, Kokkos TeamPolicies of one team and of 528 teams (4 per SM on an
// H200, the recurrence kernels' shape: 4 vectors of 32, LaunchBounds<128, 4>)
// with and without 40 KiB of team scratch and with an 8- or a 400-byte
// functor (gdn's functors are 232 to 400 bytes), two parts of the Kokkos
// launch alone (policy, closure construction), and the same launches
// without Kokkos (<<<>>> with a 480-byte parameter). The difference between
// a Kokkos launch and its raw twin is what Kokkos adds to every call.
#include <Kokkos_Core.hpp>
#include <cstdio>
#include <functional>

#include "machine.hpp"

using Exec = Kokkos::DefaultExecutionSpace;

void probe(const char* name, const std::function<void()>& call) {
  double host = 0;
  const double fenced = gdn_bench::fenced_median(call, host, 501, 50);
  std::printf("%-60s fenced %7.3f us  host %7.3f us\n", name, fenced * 1e6, host * 1e6);
}

struct EmptyRange {
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {}
};

template <int Pad>
struct EmptyTeam {
  using Policy =
      Kokkos::TeamPolicy<Exec, Kokkos::Schedule<Kokkos::Static>, Kokkos::LaunchBounds<128, 4>>;
  char pad[Pad];
  KOKKOS_INLINE_FUNCTION void operator()(const typename Policy::member_type&) const {}
};

struct Params {
  char pad[480];
};
__global__ void empty_raw() {}
__global__ void __launch_bounds__(128, 4) empty_raw_params(Params) {}

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    Exec space;
    const cudaStream_t stream = space.cuda_stream();
    probe("kokkos RangePolicy(0,1) empty", [&] {
      Kokkos::parallel_for("probe::range", Kokkos::RangePolicy<Exec>(space, 0, 1), EmptyRange{});
    });
    for (int league : {1, 528}) {
      for (int scratch : {0, 40 * 1024}) {
        char name[128];
        std::snprintf(name, sizeof name, "kokkos TeamPolicy(%d, 4, 32) scratch %d, 8-byte functor",
                      league, scratch);
        probe(name, [&] {
          typename EmptyTeam<8>::Policy p(space, league, 4, 32);
          if (scratch) p.set_scratch_size(0, Kokkos::PerTeam(scratch));
          Kokkos::parallel_for("probe::team8", p, EmptyTeam<8>{});
        });
        std::snprintf(name, sizeof name,
                      "kokkos TeamPolicy(%d, 4, 32) scratch %d, 400-byte functor", league, scratch);
        probe(name, [&] {
          typename EmptyTeam<400>::Policy p(space, league, 4, 32);
          if (scratch) p.set_scratch_size(0, Kokkos::PerTeam(scratch));
          Kokkos::parallel_for("probe::team400", p, EmptyTeam<400>{});
        });
      }
    }
    {
      using F = EmptyTeam<400>;
      typename F::Policy p(space, 528, 4, 32);
      p.set_scratch_size(0, Kokkos::PerTeam(40 * 1024));
      probe("  of which: TeamPolicy construction + set_scratch_size", [&] {
        typename F::Policy q(space, 528, 4, 32);
        q.set_scratch_size(0, Kokkos::PerTeam(40 * 1024));
        asm volatile("" : : "r"(&q) : "memory");
      });
      probe("  of which: ParallelFor closure construction (no launch)", [&] {
        Kokkos::Impl::ParallelFor<F, typename F::Policy, Exec> closure(F{}, p);
        asm volatile("" : : "r"(&closure) : "memory");
      });
    }
    probe("raw <<<1, 1>>> empty", [&] { empty_raw<<<1, 1, 0, stream>>>(); });
    probe("raw <<<528, 128, 40 KiB>>> 480-byte params",
          [&] { empty_raw_params<<<528, 128, 40 * 1024, stream>>>(Params{}); });
  }
  Kokkos::finalize();
  return 0;
}
