"""The reference engine: the numpy model of every scheme's arithmetic (GEMM, Ozaki-II, FFT)."""
