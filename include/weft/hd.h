/* WF_HD: marks per-element math that both the C compiler and nvcc compile, so a kernel's math is
 * written once (DESIGN.md, "one math, two backends"). Use as `WF_HD static inline float f(...)`. */
#ifndef WEFT_HD_H
#define WEFT_HD_H
#if defined(__CUDACC__)
#define WF_HD __host__ __device__
#else
#define WF_HD
#endif
#endif
