// Internet checksum throughput: ferry's portable RFC 1071 implementation
// (lib/net/checksum) against DPDK's rte_raw_cksum, measured in the same run.
// Prints Google Benchmark's table, then one ratio line per size:
//   checksum <N> bytes: ferry X ns, rte_raw_cksum Y ns, ratio X/Y
// A ratio near 1 means ferry's software path costs what DPDK's does.
#include <benchmark/benchmark.h>
#include <rte_ip.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "ferry/net/checksum.h"

namespace {

std::vector<uint8_t> make_data(size_t n) {
    std::vector<uint8_t> v(n);
    uint32_t x = 2463534242u;
    for (auto &b : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = static_cast<uint8_t>(x);
    }
    return v;
}

void bm_ferry(benchmark::State &state) {
    const auto data = make_data(static_cast<size_t>(state.range(0)));
    for (auto _ : state) {
        benchmark::DoNotOptimize(ferry::net::checksum(data));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}

void bm_rte(benchmark::State &state) {
    const auto data = make_data(static_cast<size_t>(state.range(0)));
    for (auto _ : state) {
        benchmark::DoNotOptimize(static_cast<uint16_t>(~rte_raw_cksum(data.data(), data.size())));
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * state.range(0));
}

// Same inputs must give the same checksum, or the comparison is meaningless.
bool cross_check() {
    for (size_t n : {1, 2, 3, 20, 63, 64, 512, 1460, 1461}) {
        const auto d = make_data(n);
        const uint16_t a = ferry::net::checksum(d);
        // rte_raw_cksum sums 16-bit words in host order; ferry's value stands
        // for the big-endian wire field.
        const uint16_t b = rte_be_to_cpu_16(static_cast<uint16_t>(~rte_raw_cksum(d.data(), d.size())));
        if (a != b) {
            std::fprintf(stderr, "checksum mismatch at %zu bytes: %04x vs %04x\n", n, a, b);
            return false;
        }
    }
    return true;
}

class ratio_reporter : public benchmark::ConsoleReporter {
public:
    void ReportRuns(const std::vector<Run> &runs) override {
        ConsoleReporter::ReportRuns(runs);
        for (const auto &r : runs) {
            const std::string name = r.benchmark_name();
            const auto slash = name.find('/');
            const std::string which = name.substr(0, slash), size = name.substr(slash + 1);
            (which == "ferry" ? ferry_ : rte_)[std::stol(size)] = r.GetAdjustedCPUTime();
        }
    }
    void print_ratios() const {
        std::printf("\n");
        for (const auto &[size, f] : ferry_) {
            auto it = rte_.find(size);
            if (it == rte_.end()) continue;
            std::printf("checksum %5ld bytes: ferry %8.1f ns, rte_raw_cksum %8.1f ns, ratio %.2f\n",
                        size, f, it->second, f / it->second);
        }
    }

private:
    std::map<long, double> ferry_, rte_;  // by size in bytes
};

}  // namespace

BENCHMARK(bm_ferry)->Name("ferry")->Arg(20)->Arg(64)->Arg(512)->Arg(1460)->Arg(9000);
BENCHMARK(bm_rte)->Name("rte")->Arg(20)->Arg(64)->Arg(512)->Arg(1460)->Arg(9000);

int main(int argc, char **argv) {
    if (!cross_check()) return 1;
    benchmark::Initialize(&argc, argv);
    ratio_reporter rep;
    benchmark::RunSpecifiedBenchmarks(&rep);
    rep.print_ratios();
    benchmark::Shutdown();
    return 0;
}
