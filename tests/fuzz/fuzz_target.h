// What every fuzz target provides: libFuzzer's entry point, and a report the
// smoke driver calls after its run (0 = the run reached the target's deep
// paths; it prints what it measured).
#pragma once
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" int fuzz_report();
