// Where the code on the path from reader::open to the first answer goes.
//
// A fresh process pays a page fault for each 64 KiB window of code it runs
// for the first time (the kernel maps a file's pages around a fault in
// 64 KiB windows).  A fault costs about 3 us on the benchmark machine, as
// much as the whole lookup, and the open path spans four source files that
// the linker would otherwise spread over the library's text.  GCC puts hot
// functions in .text.hot, which the linker gathers into one run, so the
// first answer touches one or two windows of code.  Measured in
// bench/RESULTS.md ("First answer: code faults").
#pragma once

#define BBTREE_FIRST_ANSWER [[gnu::hot]]
