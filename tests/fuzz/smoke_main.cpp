// The fuzz-smoke driver: a bounded, deterministic mutation run over a small
// seed corpus of valid frames, so CI exercises every fuzz target on every
// change (under ASan/UBSan in the sanitizer build) without a fuzzing engine.
//
//   <target> [--iterations N] [--seed S] [--corpus DIR] [--write-seeds DIR] [FILE...]
// With files: runs exactly those inputs (to replay a crash from a real
// fuzzer). Otherwise: every file in the corpus directory (what real fuzzing
// found, kept in the tree; a missing directory is an empty corpus), the
// seeds, then N mutants (bit flips, byte sets, truncation, extension,
// splices, interesting values). Prints the number of inputs run; the exit
// status is the verdict (a crash aborts). --write-seeds writes the seeds as
// files (seed-NN) into DIR and exits: the starting corpus for perf/fuzz.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
    std::string corpus_dir, seeds_out;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
            iterations = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--corpus") && i + 1 < argc)
            corpus_dir = argv[++i];
        else if (!std::strcmp(argv[i], "--write-seeds") && i + 1 < argc)
            seeds_out = argv[++i];
        else
            files.emplace_back(argv[i]);
    }
    auto read_file = [](const std::filesystem::path &f) {
        std::ifstream in(f, std::ios::binary);
        return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
    };
    if (!seeds_out.empty()) {
        std::filesystem::create_directories(seeds_out);
        const auto seeds = fuzz_seeds();
        for (size_t i = 0; i < seeds.size(); ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "seed-%02zu", i);
            std::ofstream out(std::filesystem::path(seeds_out) / name, std::ios::binary);
            out.write(reinterpret_cast<const char *>(seeds[i].data()),
                      static_cast<std::streamsize>(seeds[i].size()));
        }
        std::printf("fuzz-smoke: %zu seeds written to %s\n", seeds.size(), seeds_out.c_str());
        return 0;
    }
    if (!files.empty()) {
        for (const auto &f : files) {
            const std::vector<uint8_t> d = read_file(f);
            LLVMFuzzerTestOneInput(d.data(), d.size());
        }
        std::printf("fuzz-smoke: %zu file inputs ran clean\n", files.size());
        return 0;
    }
    // The corpus, in name order (deterministic).
    size_t replayed = 0;
    if (!corpus_dir.empty() && std::filesystem::is_directory(corpus_dir)) {
        std::vector<std::filesystem::path> paths;
        for (const auto &e : std::filesystem::directory_iterator(corpus_dir))
            if (e.is_regular_file()) paths.push_back(e.path());
        std::sort(paths.begin(), paths.end());
        for (const auto &f : paths) {
            const std::vector<uint8_t> d = read_file(f);
            LLVMFuzzerTestOneInput(d.data(), d.size());
        }
        replayed = paths.size();
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
    std::printf("fuzz-smoke: %zu corpus files + %zu seeds + %llu mutants ran clean (seed %llu)\n",
                replayed, corpus.size(), static_cast<unsigned long long>(iterations),
                static_cast<unsigned long long>(seed));
    return fuzz_report();
}
