#ifndef GDN_EXAMPLES_SPECULATIVE_OPTIONS_HPP
#define GDN_EXAMPLES_SPECULATIVE_OPTIONS_HPP

// Command line of gdn_speculative_demo, parsed by hand (no dependency) before
// Kokkos::initialize, so that --help and bad values never start a backend.

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gdn_demo {

struct Options {
  int layers = 8;
  int batch = 8;
  int window = 4;       // drafted tokens per sequence and step; also RING_LEN
  bool ragged = false;  // draw each sequence's drafted length in [1, window]
  int steps = 60;
  int prompt = 32;  // prompt tokens per sequence, prefilled before decoding
  int nk = 16;
  int nv = 32;
  int head_dim = 128;  // Dk = Dv
  bool bf16_state = false;
  std::uint64_t seed = 1;
  double accept_prob = 0.7;
  int check_layers = 2;
  bool eager = false;  // verify_ring + state_fold every step instead of the lazy flow
  int capacity = 0;    // records of the lazy history per row; 0: 3 windows
  /// The lazy history's records per row.
  int history() const { return capacity > 0 ? capacity : 3 * window; }
};

inline void print_help(const char* program) {
  const Options d;
  std::printf(
      "usage: %s [options] [--kokkos-... options]\n"
      "\n"
      "Runs the recurrent part of the Gated DeltaNet layers of a Qwen3-Next-style model (conv1d,\n"
      "gates, recurrence, speculative commit) through gdn as an inference engine does, with bf16\n"
      "activations and raw gates. Prefill: every sequence's prompt goes through gdn::conv1d_fwd\n"
      "and gdn::recurrence_prefill on every layer. Then every decoding step drafts --window "
      "tokens\n"
      "for each of --batch sequences and, on every layer, runs gdn::conv1d_verify_ring on the\n"
      "pre-conv qkv (post-conv qkv out, a conv ring instead of a conv state write-back) and\n"
      "gdn::recurrence_verify_ring on its output with the raw gates (outputs for every drafted\n"
      "token, ring records instead of a state write-back). It then draws how many tokens were\n"
      "accepted and commits that prefix of the recurrent and conv states of all layers with one\n"
      "gdn::state_fold call; the next step continues from the committed states. That is the\n"
      "eager flow (--eager); by default the demo runs the lazy flow instead: "
      "gdn::conv1d_verify_lazy\n"
      "and gdn::recurrence_verify_lazy fold each sequence's pending accepted tokens in registers\n"
      "before its window, one gdn::lazy_accept per step takes the accepted prefixes (no fold),\n"
      "and a state is written only when its history fills up. Each step a\n"
      "rotating sample of layers is replayed with gdn::conv1d_fwd + gdn::recurrence_fwd over the\n"
      "accepted tokens only, from copies of both states taken before verify, and the folded\n"
      "states and the accepted outputs must equal the replay bit for bit; at the first\n"
      "difference the demo names the step, layer and sequence and exits with 1.\n"
      "Runs on Kokkos::DefaultExecutionSpace (the GPU in a CUDA build).\n"
      "\n"
      "Options (default in brackets):\n"
      "  --layers N         GDN layers [%d]. A Qwen3-Next-80B has 36; the default keeps a\n"
      "                     2-core OpenMP run well under 30 s.\n"
      "  --batch N          sequences decoded together [%d]\n"
      "  --window N         drafted tokens per sequence and step; also RING_LEN [%d]\n"
      "  --ragged           draft a random length in [1, window] per sequence and step\n"
      "                     (a ragged batch) instead of always a full window, and a random\n"
      "                     prompt length in [1, --prompt] per sequence\n"
      "  --prompt N         prompt tokens per sequence, prefilled from zero states before\n"
      "                     decoding; 0 starts decoding from zero states [%d]\n"
      "  --steps N          decoding steps [%d]\n"
      "  --nk N             key heads per layer [%d]\n"
      "  --nv N             value heads per layer, a multiple of --nk [%d]\n"
      "  --head-dim N       Dk = Dv; the library supports 64 and 128 [%d]\n"
      "  --state-dtype T    recurrent state pool type, float or bf16 [float]. The ring is\n"
      "                     float either way, so the fold stays bit-exact; the conv state and\n"
      "                     the conv ring hold bf16 inputs, copied exactly.\n"
      "  --seed N           seeds the layers' parameters, the inputs, the row tables, the\n"
      "                     lengths and the acceptance draws [%llu]\n"
      "  --accept-prob P    chance that a drafted token is accepted given that the one before\n"
      "                     it was; accepted = min(drafted, 1 + run of successes), so at least\n"
      "                     one token (the target model's own) per sequence and step [%.2f]\n"
      "  --check-layers N   layers replayed and compared each step, rotating through all\n"
      "                     layers, 1 .. --layers [%d]. In the lazy flow their states are\n"
      "                     flushed (gdn::state_flush, not timed) before the step and after\n"
      "                     it, so that the committed states can be compared.\n"
      "  --eager            the eager flow: verify_ring and a state_fold every step\n"
      "  --capacity N       lazy flow: records the history keeps per (layer, sequence), at\n"
      "                     least --window [3 x --window]\n"
      "  --help             print this text\n"
      "Options take their value as the next argument or after '=' (--layers=4).\n"
      "Arguments starting with --kokkos- go to Kokkos (e.g. --kokkos-threads=2).\n"
      "\n"
      "Exit status: 0 exact, 1 a mismatch or a runtime error, 2 a bad option or a head\n"
      "geometry the library rejects.\n",
      program, d.layers, d.batch, d.window, d.prompt, d.steps, d.nk, d.nv, d.head_dim,
      static_cast<unsigned long long>(d.seed), d.accept_prob, d.check_layers);
}

enum class ParseResult { run, help, error };

namespace detail {

inline bool parse_int(const std::string& text, long long lo, long long hi, int& value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  value = static_cast<int>(v);
  return true;
}

inline bool parse_u64(const std::string& text, std::uint64_t& value) {
  if (text.empty() || text[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  value = static_cast<std::uint64_t>(v);
  return true;
}

inline bool parse_probability(const std::string& text, double& value) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || *end != '\0' || !(v >= 0.0 && v <= 1.0)) return false;  // also rejects NaN
  value = v;
  return true;
}

}  // namespace detail

/// Parses argv into `o`; on `error`, `message` says what was wrong.
inline ParseResult parse_options(int argc, char* argv[], Options& o, std::string& message) {
  struct IntOption {
    const char* name;
    int* value;
    long long lo, hi;
    const char* expected;
  };
  const IntOption int_options[] = {
      {"--layers", &o.layers, 1, 4096, "an integer in [1, 4096]"},
      {"--batch", &o.batch, 1, 65536, "an integer in [1, 65536]"},
      {"--window", &o.window, 1, 1024, "an integer in [1, 1024]"},
      {"--steps", &o.steps, 1, 1000000000, "an integer in [1, 1e9]"},
      {"--prompt", &o.prompt, 0, 1000000, "an integer in [0, 1e6]"},
      {"--nk", &o.nk, 1, 4096, "an integer in [1, 4096]"},
      {"--nv", &o.nv, 1, 4096, "an integer in [1, 4096]"},
      {"--head-dim", &o.head_dim, 1, 4096, "an integer in [1, 4096]"},
      {"--check-layers", &o.check_layers, 1, 4096, "an integer in [1, --layers]"},
      {"--capacity", &o.capacity, 1, 1 << 20, "an integer in [--window, 2^20]"},
  };
  bool check_layers_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--kokkos-", 0) == 0) continue;  // Kokkos::initialize reads these
    if (arg == "--help" || arg == "-h") return ParseResult::help;
    if (arg == "--ragged") {
      o.ragged = true;
      continue;
    }
    if (arg == "--eager") {
      o.eager = true;
      continue;
    }
    std::string value;
    bool has_value = false;
    const std::size_t eq = arg.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    } else if (i + 1 < argc) {
      value = argv[i + 1];
      has_value = true;
    }
    auto bad = [&](const char* expected) {
      message = "option " + arg + ": expected " + expected + ", got '" + value + "'";
      return ParseResult::error;
    };
    bool known = false;
    for (const IntOption& io : int_options) {
      if (arg != io.name) continue;
      known = true;
      if (!has_value) return bad(io.expected);
      if (!detail::parse_int(value, io.lo, io.hi, *io.value)) return bad(io.expected);
      if (io.value == &o.check_layers) check_layers_given = true;
    }
    if (!known && arg == "--state-dtype") {
      known = true;
      if (value == "float" || value == "float32" || value == "fp32") {
        o.bf16_state = false;
      } else if (value == "bf16" || value == "bfloat16") {
        o.bf16_state = true;
      } else {
        return bad("float or bf16");
      }
    } else if (!known && arg == "--seed") {
      known = true;
      if (!has_value || !detail::parse_u64(value, o.seed)) return bad("an unsigned 64-bit integer");
    } else if (!known && arg == "--accept-prob") {
      known = true;
      if (!has_value || !detail::parse_probability(value, o.accept_prob))
        return bad("a number in [0, 1]");
    }
    if (!known) {
      message = "unknown option '" + std::string(argv[i]) + "'";
      return ParseResult::error;
    }
    if (!inline_value) ++i;  // the value was the next argument
  }
  if (o.capacity > 0 && o.capacity < o.window) {
    message = "option --capacity: expected an integer in [--window = " + std::to_string(o.window) +
              ", 2^20] (a history holds a window), got " + std::to_string(o.capacity);
    return ParseResult::error;
  }
  if (o.check_layers > o.layers) {
    if (check_layers_given) {
      message = "option --check-layers: expected an integer in [1, --layers = " +
                std::to_string(o.layers) + "], got " + std::to_string(o.check_layers);
      return ParseResult::error;
    }
    o.check_layers = o.layers;  // the default sample, on a model with fewer layers
  }
  return ParseResult::run;
}

}  // namespace gdn_demo

#endif  // GDN_EXAMPLES_SPECULATIVE_OPTIONS_HPP
