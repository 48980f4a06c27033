// Subnormal floats flushed to zero: the x86 MXCSR bits FTZ (a subnormal result is written as 0)
// and DAZ (a subnormal input is read as 0). Every operation on a subnormal float takes a slow
// microcode path on Intel cores, and the gradients of a stack without residual connections
// vanish toward the first block through the subnormal range: an 8-block no-residual run took
// 30.7 s as is and 5.0 s flushed on an Intel Xeon, with a bit-identical final val loss. Only
// values below 1.2e-38 (FLT_MIN) change, to 0.
//
// The bits are per thread, and a new thread copies its creator's at creation; nothing in
// OpenBLAS (Debian's 0.3.21 pthread build: no CONSISTENT_FPCSR) or libgomp sets them later. So
// the mode is set on every thread that computes: the calling thread, each OpenMP worker, and
// OpenBLAS's pthread workers, which OpenBLAS's library constructor starts before main: their
// pool is shut down and restarted from the calling thread (blas_thread_shutdown_, the same
// restart OpenBLAS does after fork). Threads created afterwards (a larger OpenMP team, more
// OpenBLAS threads) are created by a flushed thread and so are flushed too.
// Not here: any other floating-point control (rounding mode, exceptions, x87).
#pragma once

namespace sl {

// False where this build has no flush control (not x86-64 with SSE): the setters are no-ops.
bool can_flush_subnormals();

// Sets (on) or clears (off) FTZ and DAZ on the calling thread, every OpenMP worker of the
// current team size (set_num_threads first) and OpenBLAS's workers. From the main thread,
// outside any parallel region, at setup: it restarts OpenBLAS's thread pool.
void set_flush_subnormals(bool on);

// The calling thread alone (what set_flush_subnormals does on each thread).
void set_flush_subnormals_this_thread(bool on);

// Whether the calling thread has both FTZ and DAZ set (false where can_flush_subnormals is).
bool flush_subnormals_on();

}  // namespace sl
