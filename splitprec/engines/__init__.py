"""The engines that run the schemes: ``reference`` (the numpy model of the arithmetic), ``cuda``
(the GPU kernels), and the FFT ``plan`` both follow."""
