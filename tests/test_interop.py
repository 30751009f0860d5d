"""splitprec.interop through matmul and the ffts: arrays of any library in (DLPack, CAI, numpy's
protocols, lists, scalars), the input's library out, the one value policy, the dtype -> target
rule, and the errors that name the argument. torch and jax tests skip where they are absent."""
import threading

import ml_dtypes
import numpy as np
import pytest

import splitprec as sp
from conftest import gpu_available
from splitprec import interop

rng = np.random.default_rng(27)
needs_no_gpu = pytest.mark.skipif(gpu_available(), reason="checks the error raised without a GPU")


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


class DLPackOnly:
    """An array of a library splitprec does not know: the DLPack protocol and nothing else."""

    def __init__(self, array, device=(1, 0)):
        self._array, self._device = array, device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


class ArrayInterfaceOnly:
    def __init__(self, array):
        self._array = array
        self.__array_interface__ = array.__array_interface__


class CudaInterfaceOnly:
    __cuda_array_interface__ = {"shape": (2, 2), "typestr": "<f4", "data": (0, False), "version": 3}


# -- reading: no copy, the result in the input's kind ---------------------------------------------

def test_a_dlpack_object_is_read_without_a_copy_and_gives_numpy():
    a = randn(3, 4)
    (operand,), back = interop.read("op", x=DLPackOnly(a))
    assert np.shares_memory(operand.array, a) and not operand.weak and back(a) is a
    np.testing.assert_array_equal(sp.matmul(DLPackOnly(a), a.T, dtype="bf16x9"), sp.matmul(a, a.T, dtype="bf16x9"))


def test_an_array_interface_object_and_numpy_scalars_are_read():
    a = randn(2, 3)
    np.testing.assert_array_equal(sp.fft.rfft(ArrayInterfaceOnly(a)), sp.fft.rfft(a))
    (operand,), _ = interop.read("op", x=np.float32(2))
    assert operand.array.dtype == np.float32 and not operand.weak


@pytest.mark.parametrize("call", [
    lambda m: sp.matmul(m, np.ones((2, 2), np.float32)),
    lambda m: sp.fft.fft(m),
    lambda m: sp.fft.fftconvolve(np.ones((2, 2), np.float32), m),
], ids=["matmul", "fft", "fftconvolve"])
def test_masked_arrays_are_refused_naming_the_argument(call):
    masked = np.ma.masked_array(np.ones((2, 2), np.float32), mask=[[0, 1], [0, 0]])
    with pytest.raises(TypeError, match=r"^(matmul: a|fft: a|fftconvolve: in2) is a numpy\.ma\.MaskedArray, "
                                        r"whose mask would be ignored; expected a plain array"):
        call(masked)


def test_unknown_objects_are_refused_naming_what_is_accepted():
    with pytest.raises(TypeError, match=r"^fft: a of type object is not accepted; expected an array \(numpy, "
                                        r"cupy, or any object with __dlpack__ or __cuda_array_interface__"):
        sp.fft.fft(object())


def test_a_dlpack_object_on_another_device_type_is_refused():
    with pytest.raises(TypeError, match=r"^matmul: a lives on DLPack device type 4; expected the CPU \(1\) or "
                                        r"a CUDA device"):
        sp.matmul(DLPackOnly(randn(2, 2), device=(4, 0)), randn(2, 2))


@needs_no_gpu
@pytest.mark.parametrize("operand, what", [(DLPackOnly(np.ones((2, 2), np.float32), device=(2, 0)),
                                            r"a \(on a CUDA device\)"),
                                           (CudaInterfaceOnly(), r"a \(on a CUDA device\)")],
                         ids=["dlpack", "cuda_array_interface"])
def test_device_operands_without_a_gpu_raise_naming_the_device(operand, what):
    with pytest.raises(sp.UnsupportedDeviceError, match=rf"^matmul: {what} needs a usable CUDA GPU through "
                                                        r"cupy, and there is none \(.*\); expected device 'cpu'"):
        sp.matmul(operand, np.ones((2, 2), np.float32))


@needs_no_gpu
@pytest.mark.parametrize("call", [lambda: sp.asarray([1.0], device="gpu"), lambda: sp.zeros(3, device="gpu"),
                                  lambda: sp.fft.fftfreq(4, device="gpu")], ids=["asarray", "zeros", "fftfreq"])
def test_device_gpu_without_a_gpu_raises_naming_device(call):
    with pytest.raises(sp.UnsupportedDeviceError, match=r"^\w+: device='gpu' needs a usable CUDA GPU through "
                                                        r"cupy, and there is none"):
        call()


# -- the value policy -------------------------------------------------------------------------------

def test_big_endian_float32_is_converted_exactly():
    a, b = randn(5, 7), randn(7, 3)
    np.testing.assert_array_equal(sp.matmul(a.astype(">f4"), b, dtype="tf32x3"), sp.matmul(a, b, dtype="tf32x3"))
    z = (a + 1j * a).astype(np.complex64)
    np.testing.assert_array_equal(sp.fft.fft(z.astype(">c8")), sp.fft.fft(z))


@pytest.mark.parametrize("narrow", [np.float16, ml_dtypes.bfloat16], ids=["float16", "bfloat16"])
def test_float16_and_bfloat16_are_widened_exactly(narrow):
    a, b = randn(4, 6).astype(narrow), randn(6, 2).astype(narrow)
    wide_a, wide_b = a.astype(np.float32), b.astype(np.float32)
    assert np.array_equal(wide_a.astype(narrow).astype(np.float32), wide_a)     # exact round trip
    np.testing.assert_array_equal(sp.matmul(a, b, dtype="bf16x9"), sp.matmul(wide_a, wide_b, dtype="bf16x9"))
    np.testing.assert_array_equal(sp.fft.rfft(a), sp.fft.rfft(wide_a))
    np.testing.assert_array_equal(sp.fft.fftconvolve(a[0], b[:, 0]), sp.fft.fftconvolve(wide_a[0], wide_b[:, 0]))


def test_bfloat16_nan_inf_and_subnormals_widen_bit_for_bit():
    bits = np.array([0x7FC1, 0xFF80, 0x7F80, 0x0001, 0x8001, 0x3F80], np.uint16)   # NaN payload, ±inf, subnormals
    (operand,), _ = interop.read("op", x=bits.view(ml_dtypes.bfloat16))
    widened = interop.exact(operand, "op", "x", target="float32")
    assert widened.dtype == np.float32 and widened.view(np.uint32).tolist() == [b << 16 for b in bits.tolist()]


@pytest.mark.parametrize("integers", [np.int8, np.int32, np.int64, np.uint16, np.bool_])
def test_integer_and_bool_arrays_are_taken_where_the_target_holds_them(integers):
    a = (np.arange(12) % 3).astype(integers).reshape(3, 4)
    np.testing.assert_array_equal(sp.matmul(a, a.T, dtype="bf16x9"), sp.matmul(a.astype(np.float32),
                                                                               a.T.astype(np.float32), dtype="bf16x9"))
    np.testing.assert_array_equal(sp.fft.fft(a), sp.fft.fft(a.astype(np.float32)))


@pytest.mark.parametrize("call, message", [
    (lambda: sp.matmul(np.array([[2 ** 24 + 1]]), [[1]]),
     r"^matmul: a holds a value that float32 cannot hold exactly \(16777217\); round explicitly, "
     r"e\.g\. numpy\.float32\(a\)"),
    (lambda: sp.matmul(np.ones((1, 1)), np.array([[2 ** 53 + 1]], np.int64)),
     r"^matmul: b holds a value that float64 cannot hold exactly \(9007199254740993\)"),
    (lambda: sp.matmul([[0.1, 1.0]], [[1.0], [2.0]]),
     r"^matmul: a holds a value that float32 cannot hold exactly \(0\.1\)"),
    (lambda: sp.fft.fft([1 + 0.1j, 2]), r"^fft: a holds a value that complex64 cannot hold exactly \(\(1\+0\.1j\)\)"),
    (lambda: sp.fft.rfft([1j, 2]), r"^rfft: a has dtype complex128; accepted: float32, float16 or bfloat16 data"),
    (lambda: sp.fft.fftconvolve(np.ones(3), np.ones(3, np.float32)),
     r"^fftconvolve: in1 has dtype float64; accepted: float32, float16 or bfloat16 data, and integers"),
])
def test_values_the_target_cannot_hold_are_refused_naming_the_argument(call, message):
    with pytest.raises(TypeError, match=message):
        call()


@pytest.mark.parametrize("call, error, message", [
    (lambda: sp.asarray([[1, 2], [3]]), ValueError,
     r"^asarray: x is a nested sequence numpy cannot make an array of \(.*\); expected a scalar or lists of equal "
     r"lengths at each level$"),
    (lambda: sp.matmul([[1.0]], [[1.0], [2.0, 3.0]]), ValueError, r"^matmul: b is a nested sequence numpy cannot"),
    (lambda: sp.asarray([1, 2 ** 64]), TypeError,
     r"^asarray: x holds an integer of magnitude 2\*\*53 or more \(18446744073709551616\); integers are taken "
     r"below 2\*\*53, where float32 holds them exactly"),
    (lambda: sp.asarray(np.int64([2 ** 53])), TypeError, r"^asarray: x holds an integer of magnitude 2\*\*53 or more"),
    (lambda: sp.fft.fft([2 ** 64 + 1, 1j]), TypeError,
     r"^fft: a holds a value that complex64 cannot hold exactly \(18446744073709551617\)"),
    (lambda: sp.asarray([1.0, None]), TypeError,
     r"^asarray: x holds None of type NoneType; accepted: float32, float16 or bfloat16 data, and integers"),
])
def test_python_data_numpy_cannot_type_is_refused_naming_the_argument_regression(call, error, message):
    """Ragged lists raised numpy's ValueError, which names no argument; Python ints beyond int64 and
    non-numbers (None, Fraction) said "x has dtype object", and 2**53 or 2**100, which float32
    holds exactly, that float32 "cannot hold" them. Each message now names the argument, the value
    and what is accepted."""
    with pytest.raises(error, match=message):
        call()


def test_lists_tuples_and_python_scalars_are_read_as_asarray_reads_them():
    np.testing.assert_array_equal(sp.matmul([[1, 2], [3, 4]], ((0.5,), (0.25,))), np.float32([[1.0], [2.5]]))
    np.testing.assert_array_equal(sp.fft.fft([1, 0, 0, 0]), np.ones(4, np.complex64))
    np.testing.assert_array_equal(sp.fft.fft([1j, 0]), np.complex64([1j, 1j]))
    assert sp.asarray([[1, 2]]).to_numpy().tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match=r"^matmul: a is a scalar \(ndim 0\)"):
        sp.matmul(2.0, [1.0])
    with pytest.raises(np.exceptions.AxisError, match=r"^fft: axis -1 is out of bounds"):
        sp.fft.fft(2.0)


# -- the operand dtype picks the target -------------------------------------------------------------

def test_float64_operands_run_the_fp64_class_and_float32_the_fp32_class():
    a64, b64 = rng.standard_normal((8, 40)), rng.standard_normal((40, 5))
    c = sp.matmul(a64, b64)
    assert c.dtype == np.float64
    np.testing.assert_array_equal(c, sp.matmul(a64, b64, dtype="ozaki2_int8_adaptive"))
    a, b = a64.astype(np.float32), b64.astype(np.float32)
    np.testing.assert_array_equal(sp.matmul(a, b), sp.matmul(a, b, dtype="tf32x3"))


def test_integers_and_python_data_take_the_other_operands_target():
    a64 = rng.standard_normal((3, 4))
    ints = np.arange(8).reshape(4, 2)
    np.testing.assert_array_equal(sp.matmul(a64, ints), sp.matmul(a64, ints.astype(np.float64), precision="fp64"))
    np.testing.assert_array_equal(sp.matmul(a64, [[0.1]] * 4), sp.matmul(a64, np.full((4, 1), 0.1), precision="fp64"))
    assert sp.matmul(ints.T, ints).dtype == np.float32


def test_float32_beside_float64_is_refused_naming_both_dtypes():
    with pytest.raises(TypeError, match=r"^matmul: a has dtype float32 and b has dtype float64; the operands' dtype "
                                        r"picks the target, so expected both float32 \(fp32-class schemes\) or both "
                                        r"float64 \(fp64-class schemes\), or dtype= or precision="):
        sp.matmul(randn(2, 2), np.ones((2, 2)))
    with pytest.raises(TypeError, match=r"^matmul: a has dtype float16 and b has dtype complex128"):
        sp.matmul(np.ones((2, 2), np.float16), np.ones((2, 2), np.complex128))


@pytest.mark.parametrize("precision, error, message", [
    ([], TypeError, r"^precision must be 'fp32' or 'fp64' \(a str\), got \[\] of type list"),
    ({}, TypeError, r"^precision must be 'fp32' or 'fp64' \(a str\), got \{\} of type dict"),
    ("fp16", ValueError, r"^unknown precision 'fp16'; expected 'fp32' or 'fp64'"),
])
def test_bad_precision_is_refused_naming_precision_and_the_accepted_values(precision, error, message):
    with pytest.raises(error, match=message):
        sp.matmul(randn(2, 2), randn(2, 2), precision=precision)


def test_1d_by_1d_returns_a_numpy_scalar_as_numpy():
    v = randn(5)
    c = sp.matmul(v, v)
    assert type(c) is np.float32 and type(np.matmul(v, v)) is np.float32
    assert type(sp.matmul(v.astype(np.float64), v.astype(np.float64))) is np.float64
    out = np.empty((), np.float32)
    assert sp.matmul(v, v, out=out) is out and out == c


# -- torch (CPU) and jax through DLPack ------------------------------------------------------------

def test_torch_tensors_in_give_torch_tensors_out():
    torch = pytest.importorskip("torch")
    a, b = randn(6, 5), randn(5, 4)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    (operand,), _ = interop.read("op", a=ta)
    assert np.shares_memory(operand.array, ta.numpy())                              # no copy in
    c = sp.matmul(ta, tb, dtype="bf16x9")
    assert isinstance(c, torch.Tensor) and c.dtype == torch.float32
    np.testing.assert_array_equal(c.numpy(), sp.matmul(a, b, dtype="bf16x9"))
    assert isinstance(sp.matmul(ta, b), torch.Tensor)                             # numpy beside torch: torch
    np.testing.assert_array_equal(sp.matmul(ta[:, ::2], tb.T.contiguous().T[::2]).numpy(),   # strided views
                                  sp.matmul(a[:, ::2], b[::2]))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "rfftn", "irfftn",
                                  "fftshift", "ifftshift"])
def test_every_fft_of_a_torch_tensor_is_a_torch_tensor(name):
    torch = pytest.importorskip("torch")
    x = randn(4, 8)
    y = getattr(sp.fft, name)(torch.from_numpy(x))
    assert isinstance(y, torch.Tensor)
    np.testing.assert_array_equal(y.numpy(), getattr(sp.fft, name)(x))


def test_torch_out_convolution_bfloat16_and_grad_errors():
    torch = pytest.importorskip("torch")
    x, h = randn(32), randn(5)
    out = torch.empty(17, dtype=torch.complex64)
    assert sp.fft.rfft(torch.from_numpy(x), out=out) is out
    np.testing.assert_array_equal(out.numpy(), sp.fft.rfft(x))
    y = sp.fft.fftconvolve(torch.from_numpy(x), torch.from_numpy(h))
    assert isinstance(y, torch.Tensor) and np.array_equal(y.numpy(), sp.fft.fftconvolve(x, h))
    b16 = torch.from_numpy(x).to(torch.bfloat16)
    np.testing.assert_array_equal(sp.fft.fft(b16).numpy(), sp.fft.fft(b16.float().numpy()))
    with pytest.raises(TypeError, match=r"^matmul: a \(torch\.Tensor\) could not be read through DLPack: Can't "
                                        r"export tensors that require gradient"):
        sp.matmul(torch.ones(2, 2, requires_grad=True), torch.ones(2, 2))


def test_jax_arrays_in_give_jax_arrays_out():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a, b = randn(4, 6), randn(6, 3)
    c = sp.matmul(jnp.asarray(a), jnp.asarray(b), dtype="tf32x3")
    assert isinstance(c, jax.Array) and c.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(c), sp.matmul(a, b, dtype="tf32x3"))
    y = sp.fft.rfft(jnp.asarray(a).astype(jnp.bfloat16))
    assert isinstance(y, jax.Array)
    np.testing.assert_array_equal(np.asarray(y), sp.fft.rfft(a.astype(ml_dtypes.bfloat16)))


def test_an_immutable_jax_out_is_refused_naming_out_regression():
    """A jax ``out=`` raised jax's "JAX arrays are immutable ..." (sp.matmul, sp.fft) or numpy's
    "return arrays must be of ArrayType" (numpy functions of SplitArrays), neither naming ``out``."""
    jnp = pytest.importorskip("jax.numpy")
    x, s = jnp.ones((2, 2), jnp.float32), sp.ones((2, 2), dtype="tf32x3")
    for op, call in (("matmul", lambda out: sp.matmul(x, x, out=out)), ("irfft", lambda out: sp.fft.irfft(x, out=out)),
                     ("add", lambda out: np.add(s, s, out=out)), ("cumsum", lambda out: np.cumsum(s, axis=0, out=out))):
        with pytest.raises(TypeError, match=rf"^{op}: out is a jaxlib\.\S*ArrayImpl, an immutable array that cannot "
                                            r"be written in place; expected out=None"):
            call(jnp.zeros((2, 2), jnp.float32))


def test_operands_of_two_libraries_are_refused():
    torch, jax = pytest.importorskip("torch"), pytest.importorskip("jax")
    with pytest.raises(TypeError, match=r"^matmul: operands from different libraries \(jaxlib.*ArrayImpl and "
                                        r"torch\.Tensor\); expected arrays of one library"):
        sp.matmul(jax.numpy.ones((2, 2)), torch.ones(2, 2))


def test_reading_is_thread_safe():
    torch = pytest.importorskip("torch")
    x = randn(8, 64)
    expected, results = sp.fft.fft(x), []
    threads = [threading.Thread(target=lambda: results.append(sp.fft.fft(torch.from_numpy(x)).numpy()))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.array_equal(r, expected) for r in results)


# -- GPU: cupy and torch CUDA tensors, zero-copy, on the current stream -----------------------------

@pytest.mark.gpu
def test_gpu_torch_cuda_tensors_are_read_without_a_copy_and_given_back():
    torch, cupy = pytest.importorskip("torch"), pytest.importorskip("cupy")
    if not torch.cuda.is_available():
        pytest.skip("this torch has no CUDA")
    a = torch.randn(64, 32, device="cuda")
    (operand,), _ = interop.read("op", a=a)
    assert isinstance(operand.array, cupy.ndarray) and operand.array.data.ptr == a.data_ptr()
    c = sp.matmul(a, a.T, dtype="bf16x9")
    assert isinstance(c, torch.Tensor) and c.device.type == "cuda"
    cupy.testing.assert_array_equal(cupy.from_dlpack(c), sp.matmul(cupy.from_dlpack(a), cupy.from_dlpack(a).T,
                                                                   dtype="bf16x9"))
    y = sp.fft.fft(a)
    assert isinstance(y, torch.Tensor) and y.device.type == "cuda"


@pytest.mark.gpu
def test_gpu_cupy_in_cupy_out_on_the_current_stream():
    cupy = pytest.importorskip("cupy")
    a = cupy.asarray(randn(128, 64))
    cupy.cuda.Device().synchronize()      # a non-blocking stream does not wait for the copy on the null stream
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        c = sp.matmul(a, a.T, dtype="tf32x3")
        y = sp.fft.rfft(a)
    stream.synchronize()
    assert isinstance(c, cupy.ndarray) and isinstance(y, cupy.ndarray)
    cupy.testing.assert_array_equal(c, sp.matmul(a, a.T, dtype="tf32x3"))
    v = cupy.asarray(randn(16))
    assert isinstance(sp.matmul(v, v), cupy.ndarray) and sp.matmul(v, v).ndim == 0    # as cupy.matmul


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_every_entry_point_reads_ndarray_subclasses_as_plain_arrays_regression():
    """``numpy.matrix`` operands crashed in the engines (``matrix.max`` takes no ``keepdims``): they
    are read as their plain ndarray, giving the plain array's results bit for bit."""
    a = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    z = (a + 1j * a[::-1]).astype(np.complex64)
    for call in (lambda x: sp.matmul(x, x, dtype="bf16x9"), lambda x: np.asarray(sp.asarray(x, dtype="bf16x9")),
                 lambda x: sp.fft.rfft(x, dtype="bf16x6")):
        got = call(np.asmatrix(a))
        assert type(got) is np.ndarray and np.array_equal(got, call(a))
    assert np.array_equal(sp.fft.fft(np.asmatrix(z)), sp.fft.fft(z))
