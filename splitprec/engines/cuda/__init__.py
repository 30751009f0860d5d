"""The CUDA engine: kernels in ``kernels/`` compiled by NVRTC and launched through cupy."""
