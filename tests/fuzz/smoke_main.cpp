// The fuzz-smoke driver: a bounded, deterministic mutation run over a small
// seed corpus of valid frames, so CI exercises every fuzz target on every
// change (under ASan/UBSan in the sanitizer build) without a fuzzing engine.
//
//   <target> [--iterations N] [--seed S] [FILE...]
// With files: runs exactly those inputs (to replay a crash from a real
// fuzzer). Otherwise: the seeds, then N mutants (bit flips, byte sets,
// truncation, extension, splices, interesting values). Prints the number of
// inputs run; the exit status is the verdict (a crash aborts).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "seeds.h"

namespace {

struct rng {
    uint64_t s;
    uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
};

void mutate(std::vector<uint8_t> &d, rng &r, const std::vector<std::vector<uint8_t>> &corpus) {
    static const uint8_t interesting[] = {0x00, 0x01, 0x04, 0x05, 0x06, 0x08, 0x0f, 0x40, 0x45,
                                          0x7f, 0x80, 0xfe, 0xff};
    const unsigned rounds = 1 + static_cast<unsigned>(r.below(4));
    for (unsigned i = 0; i < rounds; ++i) {
        switch (r.below(6)) {
            case 0:  // flip a bit
                if (!d.empty()) d[r.below(d.size())] ^= static_cast<uint8_t>(1u << r.below(8));
                break;
            case 1:  // set an interesting byte
                if (!d.empty()) d[r.below(d.size())] = interesting[r.below(sizeof interesting)];
                break;
            case 2:  // truncate
                d.resize(r.below(d.size() + 1));
                break;
            case 3:  // extend with random bytes
                for (size_t n = r.below(64); n > 0; --n) d.push_back(static_cast<uint8_t>(r.next()));
                break;
            case 4: {  // splice the tail of another seed
                const auto &o = corpus[r.below(corpus.size())];
                const size_t at = r.below(d.size() + 1), from = r.below(o.size() + 1);
                d.resize(at);
                d.insert(d.end(), o.begin() + static_cast<long>(from), o.end());
                break;
            }
            default:  // a random 16-bit word (lengths, checksums, types)
                if (d.size() >= 2) {
                    const size_t at = r.below(d.size() - 1);
                    d[at] = static_cast<uint8_t>(r.next());
                    d[at + 1] = static_cast<uint8_t>(r.next());
                }
        }
    }
}

}  // namespace

int main(int argc, char **argv) {
    uint64_t iterations = 100000, seed = 0x5eed;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else
            files.emplace_back(argv[i]);
    }
    if (!files.empty()) {
        for (const auto &f : files) {
            std::ifstream in(f, std::ios::binary);
            std::vector<uint8_t> d((std::istreambuf_iterator<char>(in)), {});
            LLVMFuzzerTestOneInput(d.data(), d.size());
        }
        std::printf("fuzz-smoke: %zu file inputs ran clean\n", files.size());
        return 0;
    }
    const std::vector<std::vector<uint8_t>> corpus = fuzz_seeds();
    for (const auto &s : corpus) LLVMFuzzerTestOneInput(s.data(), s.size());
    rng r{seed | 1};
    std::vector<uint8_t> d;
    for (uint64_t i = 0; i < iterations; ++i) {
        d = corpus[r.below(corpus.size())];
        mutate(d, r, corpus);
        LLVMFuzzerTestOneInput(d.data(), d.size());
    }
    std::printf("fuzz-smoke: %zu seeds + %llu mutants ran clean (seed %llu)\n", corpus.size(),
                static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(seed));
    return fuzz_report();
}
