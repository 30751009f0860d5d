"""The reference FFT engine: Stockham passes whose butterflies are split-precision products.

A pass of radix ``r`` (``n = r * m`` at this pass) views the data as ``(batch, r, m, q)`` and
makes each length-``r`` sub-vector one row of a real float32 matrix ``X`` (``Re, Im``
interleaved); ``X @ D``, with ``D`` the ``2r x 2r`` real block of the DFT matrix, is one split
product (a ``k = 2r`` dot product per output, float32 accumulation and the scheme's product
error); the outputs are multiplied by the pass's twiddles in complex64 and stored transposed
(Stockham autosort: no bit reversal). Two-step plans transform the ``n2`` strided lines of
length ``n1``, multiply by the step twiddles, then the ``n1`` contiguous lines of length ``n2``;
Bluestein runs the convolution with the chirp as two forward power-of-two transforms read
backwards (``DFT(DFT(z))[-k] = m z[k]``). Real input of even length ``n`` runs one complex
transform of the ``n / 2`` packed pairs ``x[2j] + i x[2j+1]`` with a complex64 step after (or
before) it. Every transform scales each line by a power of two first (``plan.line_top``: tiny lines
up, huge ones down), applies the ``norm`` factor at that scale and scales back last, rounding once:
tiny lines keep mid-range accuracy. Before scaling back, every output component is limited to the
magnitude no exact output of its line can exceed, ``|factor| * sum_j |x_j|``, and to float32's
largest value where that rounds finite (:mod:`splitprec.engines.limit`): results are ±inf only
where the transform may overflow float32.
:class:`Stockham` is the algorithm; the CUDA engine runs it with its own products.
"""
import numpy as np

from ..._backend import namespace
from ...split import split
from ..limit import limit, moduli, modulus_sum, saturated
from ..plan import line_top, plan, real_twiddles
from .gemm import narrow_matmul


class Stockham:
    """The transform algorithm of the module docstring on numpy arrays. A subclass for another
    device replaces ``device``, :meth:`block_product`, :meth:`flag_nonfinite`, :meth:`unpack`,
    :meth:`pack`, :meth:`conjugate`, :meth:`line_exponents` and :meth:`scale_lines`, and may run whole plans its own
    way by overriding :meth:`lines`."""

    device = "cpu"

    def line_exponents(self, lines, top):
        """int32 ``(lines, 1)``: ``e`` with each line's largest finite ``|Re|``, ``|Im|`` (of float32 or
        complex64 ``lines``, C-contiguous) times ``2**-e`` in ``[2**(top-1), 2**top)``; 0 for a zero line."""
        flat = lines.view(np.float32)
        peak = np.where(np.isfinite(flat), np.abs(flat), np.float32(0)).max(axis=-1, keepdims=True)
        _, e = np.frexp(peak)
        return np.where(peak > 0, e - top, 0).astype(np.int32)

    def scale_lines(self, lines, exponent):
        """``lines`` (float32 or complex64, C-contiguous ``(lines, n)``) times ``2**exponent`` per line,
        each component rounded once (±inf beyond float32's range, subnormals kept)."""
        with np.errstate(over="ignore"):
            return np.ldexp(lines.view(np.float32), exponent).astype(np.float32).view(lines.dtype)

    def scaled(self, x, top, run, factor=1.0, *, gain=1.0, hermitian=False):
        """``run`` (lines -> lines) on the lines of ``x`` (..., n) scaled by the powers of two of
        :meth:`line_exponents`, its outputs times ``factor`` (float32) at that scale, limited to
        :meth:`output_limit` and scaled back. ``gain``: the largest ``|t|`` of factors
        ``t`` that ``run`` multiplies its outputs by (a float, or a 0-d array on the lines' device,
        so that no device waits); ``hermitian``: the lines are the first halves
        of Hermitian spectra of even length (as :meth:`real_inverse` reads them)."""
        xp = namespace(x)
        lines = xp.ascontiguousarray(x).reshape(-1, x.shape[-1])
        exponent = self.line_exponents(lines, top)
        inputs = self.scale_lines(lines, -exponent)
        y = run(inputs)
        if factor != 1.0:
            y = y * np.float32(factor)
        ceiling = self.output_limit(inputs, exponent, max(abs(factor), abs(float(np.float32(factor)))) * gain, hermitian)
        y = saturated(y, ceiling)
        return self.scale_lines(y, exponent).reshape(x.shape[:-1] + y.shape[-1:])

    def output_limit(self, lines, exponent, gain, hermitian):
        """float32 ``(lines, 1)``: :func:`splitprec.engines.limit.limit` of ``gain`` times the scaled
        ``lines``' :func:`~splitprec.engines.limit.modulus_sum`, at the lines' scale."""
        return limit(modulus_sum(lines, hermitian=hermitian) * gain, exponent)

    def block_product(self, rows, step, d):
        """``rows @ step.block`` (float32 ``(rows, 2r)``) in scheme ``d``."""
        return narrow_matmul(split(rows, d, axis=-1), step.block, d)

    def flag_nonfinite(self, x, nonfinite):
        """Record in ``nonfinite`` whether ``x`` holds NaN or ±inf (only devices that ask for it)."""

    def lines(self, x, p, d, nonfinite=None, times=None):
        """Forward DFT along the last axis of complex64 ``x`` (batch, n) by the passes of ``p``;
        ``nonfinite``, ``times``: as :meth:`forward`."""
        if p.steps is not None:
            return self.steps(x, p, d, nonfinite, times)
        xp = namespace(x)
        self.flag_nonfinite(x, nonfinite)
        batch, q = x.shape[0], 1
        y = x.reshape(batch, p.n, 1)
        for step in p.passes:
            r, m = step.r, step.m
            rows = xp.ascontiguousarray(y.reshape(batch, r, m, q).transpose(0, 2, 3, 1))
            z = self.block_product(rows.view(np.float32).reshape(-1, 2 * r), step, d)
            z = z.view(np.complex64).reshape(batch, m, q, r)
            if step.twiddle is not None:
                z = z * step.twiddle
            y = z.transpose(0, 1, 3, 2).reshape(batch, m, r * q)
            q *= r
        y = y.reshape(batch, p.n)
        return y if times is None else y * times

    def steps(self, x, p, d, nonfinite, times=None):
        """The two-step transform of complex64 ``x`` (batch, n1 * n2) (module docstring)."""
        xp = namespace(x)
        first, second, table = p.steps
        n1, n2, batch = first.n, second.n, x.shape[0]
        lines = xp.ascontiguousarray(x.reshape(batch, n1, n2).transpose(0, 2, 1)).reshape(-1, n1)
        z = self.lines(lines, first, d, nonfinite).reshape(batch, n2, n1).transpose(0, 2, 1) * table
        z = self.lines(xp.ascontiguousarray(z).reshape(-1, n2), second, d)
        y = xp.ascontiguousarray(z.reshape(batch, n1, n2).transpose(0, 2, 1)).reshape(batch, p.n)
        return y if times is None else y * times

    def forward(self, x, d, *, nonfinite=None, times=None, factor=1.0):
        """Forward DFT along the last axis of complex64 ``x`` (any leading shape) in scheme ``d``.

        ``nonfinite`` (devices that report it: a device flag, or None) is set when ``x`` holds NaN
        or ±inf (the outputs of such lines are then not meaningful). ``times`` (complex64 ``(n,)``
        of ``x``'s kind, or None) multiplies every line's outputs, in complex64 arithmetic, and then
        ``factor`` (the ``norm`` factor, float32), both at the lines' power-of-two scale.
        """
        xp = namespace(x)
        n = x.shape[-1]
        if x.size == 0:
            return xp.empty(x.shape, np.complex64)
        p = plan(n, d, self.device)
        gain = 1.0 if times is None else moduli(times).max() * (1 + 2.0 ** -50)
        return self.scaled(x, line_top(p), lambda lines: self._plan(lines, p, d, nonfinite, times), factor, gain=gain)

    def _plan(self, lines, p, d, nonfinite, times):
        """Plan ``p`` on complex64 ``lines`` (lines, n): Stockham passes, or Bluestein around them."""
        if p.chirp is None:
            return self.lines(lines, p, d, nonfinite, times)
        xp = namespace(lines)
        n, m = p.n, p.inner.n
        a = xp.zeros((lines.shape[0], m), np.complex64)
        a[:, :n] = lines * p.chirp
        # DFT_m(DFT_m(a) * spectrum)[-k] is the convolution at k (spectrum holds the 1/m): both
        # transforms are forward, the products ride on their stores, and the result is read backwards.
        z = self.lines(self.lines(a, p.inner, d, nonfinite, times=p.spectrum), p.inner, d, times=p.chirp_back)
        y = xp.concatenate((z[:, :1], z[:, :m - n:-1]), axis=1)
        return y if times is None else y * times

    def conjugate(self, x):
        """The complex conjugate of complex64 ``x``, exactly (subnormal imaginary parts kept)."""
        return np.conj(x)

    def inverse(self, x, d, nonfinite=None, factor=1.0):
        """Unnormalized inverse DFT along the last axis (times ``factor``): ``conj(forward(conj(x)))``."""
        return self.conjugate(self.forward(self.conjugate(x), d, nonfinite=nonfinite, factor=factor))

    def padded_forward(self, h, length, d, nonfinite=None, scale=1.0):
        """The forward DFT of length ``length`` of each row of ``h`` (float32 or complex64, ``(rows,
        n)``, ``n <= length``) zero-padded and times ``scale`` (a power of two: exact)."""
        xp = namespace(h)
        taps = xp.zeros((h.shape[0], length), np.complex64)
        taps[:, :h.shape[1]] = h * np.float32(scale)
        return self.forward(taps, d, nonfinite=nonfinite)

    def unpack(self, z, n):
        """The first ``n // 2 + 1`` outputs of a real transform from ``z``, the DFT of its packed
        pairs: ``X_k = E_k + w^k O_k`` with ``E_k = (Z_k + conj Z_{m-k}) / 2``, ``O_k = -i (Z_k -
        conj Z_{m-k}) / 2`` and ``w^k`` the rounded twiddle, in complex64 arithmetic."""
        a = np.concatenate([z, z[..., :1]], axis=-1)                       # Z_k, k = 0..m (Z_m = Z_0)
        b = np.conj(np.concatenate([z[..., :1], z[..., ::-1]], axis=-1))   # conj Z_{(m - k) mod m}
        return (a + b) * np.float32(0.5) + real_twiddles(n, "cpu") * ((a - b) * np.complex64(-0.5j))

    def pack(self, c, n):
        """The packed spectrum ``Z_k = (X_k + conj X_{m-k}) + i w^-k (X_k - conj X_{m-k})``, ``k < m
        = n / 2``, of the half spectrum ``c``, the imaginary parts of ``c[0]`` and ``c[m]`` ignored."""
        m = n // 2
        c = np.array(c, dtype=np.complex64)
        c.imag[..., 0] = 0
        c.imag[..., m] = 0
        a, b = c[..., :m], np.conj(c[..., m:0:-1])
        return (a + b) + np.complex64(1j) * (np.conj(real_twiddles(n, "cpu")[:m]) * (a - b))

    def real_forward(self, x, d, nonfinite=None, factor=1.0):
        """The first ``n // 2 + 1`` outputs of the DFT of real float32 ``x`` (..., n), times ``factor``:
        for even ``n`` one complex transform of half the length and :meth:`unpack` (both at the
        lines' power-of-two scale, one bit below the half-length plan's: the unpacking adds two
        outputs), for odd ``n`` the complex transform of length ``n``."""
        xp = namespace(x)
        n = x.shape[-1]
        if n % 2:
            return self.forward(x.astype(np.complex64), d, nonfinite=nonfinite, factor=factor)[..., :n // 2 + 1]
        if x.size == 0:
            return xp.empty(x.shape[:-1] + (n // 2 + 1,), np.complex64)

        def run(lines):
            z = self.forward(lines.view(np.complex64), d, nonfinite=nonfinite)
            return self.unpack(z, n)
        return self.scaled(xp.ascontiguousarray(x, dtype=np.float32), line_top(plan(n // 2, d, self.device)) - 1,
                           run, factor)

    def real_inverse(self, c, n, d, nonfinite=None, factor=1.0):
        """Real float32 ``x`` (..., n) whose DFT has first half ``c`` (..., n // 2 + 1), unnormalized
        but for ``factor``; the imaginary parts of ``c[0]`` and (even ``n``) ``c[n // 2]`` are
        ignored, as numpy.fft.irfft does with finite ones: for even ``n`` the inverse of length ``n /
        2`` of :meth:`pack` (at the lines' power-of-two scale, three bits below the half-length
        plan's: the packing adds four inputs), whose outputs are the pairs ``x[2j] + i x[2j+1]``; for
        odd ``n`` the complex inverse of the Hermitian spectrum of length ``n``."""
        xp = namespace(c)
        if n % 2 == 0:
            if c.size == 0:
                return xp.empty(c.shape[:-1] + (n,), np.float32)

            def run(lines):
                return xp.ascontiguousarray(self.inverse(self.pack(lines, n), d, nonfinite)).view(np.float32)
            return self.scaled(xp.ascontiguousarray(c, dtype=np.complex64),
                               line_top(plan(n // 2, d, self.device)) - 3, run, factor, hermitian=True)
        c = xp.array(c, dtype=np.complex64)
        c.imag[..., 0] = 0
        full = xp.empty(c.shape[:-1] + (n,), np.complex64)
        full[..., :c.shape[-1]] = c
        full[..., c.shape[-1]:] = self.conjugate(c[..., 1:])[..., ::-1]
        return self.inverse(full, d, nonfinite, factor).real


ENGINE = Stockham()
forward, inverse, real_forward, real_inverse, padded_forward, conjugate = (
    ENGINE.forward, ENGINE.inverse, ENGINE.real_forward, ENGINE.real_inverse, ENGINE.padded_forward, ENGINE.conjugate)
