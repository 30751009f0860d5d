"""SplitArray and Python's and numpy's protocols: no export leaves a stale split, copy and pickle
give values, scalar conversions, containment, truth, ``== None``, and the scheme as ``a.dtype``."""
import copy
import ctypes
import operator
import pickle

import numpy as np
import pytest

import splitprec as sp
from splitprec.split import split

rng = np.random.default_rng(3)


def randn(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def product_is_fresh(w, x):
    """``w @ x`` equals sp.matmul of w's current values (not those of an old split)."""
    return np.array_equal(np.asarray(w @ x), sp.matmul(w.to_numpy(), x.to_numpy(), dtype=w.dtype))


def foreign_write(exported, index, value):
    """Write ``value`` at ``index`` of ``exported`` through its raw pointer, as a C consumer of a
    DLPack capsule may (the read-only flag does not bind it)."""
    offset = sum(i * s for i, s in zip(index, exported.strides))
    ctypes.memmove(exported.ctypes.data + offset, np.float32(value).tobytes(), 4)


# -- no stale split ------------------------------------------------------------------------------

def test_numpy_view_cannot_be_made_writable_regression():
    w = sp.asarray(randn(4, 4), dtype="bf16x9")
    view = np.asarray(w)
    assert not view.flags.writeable
    with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
        view.flags.writeable = True
    with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
        view[::2].flags.writeable = True


def test_numpy_view_leads_to_no_writable_alias_regression():
    w, x = sp.asarray(randn(4, 4), dtype="bf16x9"), sp.asarray(randn(4, 2), dtype="bf16x9")
    w @ x
    chain = [np.asarray(w)]
    while getattr(chain[-1], "base", None) is not None:
        chain.append(chain[-1].base)
    for link in chain:
        alias = np.asarray(link)
        assert not alias.flags.writeable
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
            alias.flags.writeable = True
    assert not any(isinstance(link, np.ndarray) and link.flags.writeable for link in chain)
    assert product_is_fresh(w, x)


def test_a_changed_interface_of_an_export_makes_no_writable_alias_regression():
    """The read-only view's base handed out its ``__array_interface__`` dict itself: setting its
    read-only flag to False made ``np.asarray(base)`` a writable alias of the storage, and a
    write through it left the next product stale."""
    w, x = sp.asarray(randn(3, 3), dtype="bf16x9"), sp.asarray(randn(3, 2), dtype="bf16x9")
    w @ x
    for base in (np.asarray(w).base, w.terms[0].base):
        interface = base.__array_interface__
        interface["data"] = (interface["data"][0], False)
        assert base.__array_interface__["data"][1] is True
        with pytest.raises(ValueError, match="read-only"):
            np.asarray(base)[0, 0] = 5.0
    assert product_is_fresh(w, x)


@pytest.mark.parametrize("call", [
    lambda w: np.apply_along_axis(lambda row: row.__setitem__(0, 5.0) or row, 1, w),
    lambda w: np.apply_over_axes(lambda a, axis: a.__setitem__((0, 0), 5.0) or a, w, [0]),
], ids=["apply_along_axis", "apply_over_axes"])
def test_numpy_callbacks_get_read_only_views_of_the_values_regression(call):
    """``np.apply_along_axis`` handed its function writable views of a SplitArray's storage: a write
    there went unseen, and the next product used the stale split."""
    w, x = sp.asarray(randn(3, 3), dtype="bf16x9"), sp.asarray(randn(3, 2), dtype="bf16x9")
    w @ x
    before = np.asarray(w).copy()
    with pytest.raises(ValueError, match="read-only"):
        call(w)
    assert np.array_equal(np.asarray(w), before) and product_is_fresh(w, x)
    doubled = np.apply_along_axis(lambda row: row * 2, 1, w)
    assert isinstance(doubled, sp.SplitArray) and np.array_equal(np.asarray(doubled), 2 * before)


def test_terms_are_read_only_regression():
    w = sp.asarray(randn(3, 3), dtype="bf16x9")
    for term in w.terms:
        with pytest.raises(ValueError, match="read-only"):
            term[0, 0] = 1.0
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
            term.flags.writeable = True


def test_from_dlpack_gives_a_read_only_array():
    w = sp.asarray(randn(3, 5), dtype="tf32x3")[:, ::2]
    exported = np.from_dlpack(w)
    assert not exported.flags.writeable and np.array_equal(exported, w.to_numpy())
    with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
        exported.flags.writeable = True
    copied = np.from_dlpack(w, copy=True)
    assert copied.flags.writeable and not np.shares_memory(copied, exported)


@pytest.mark.parametrize("name", ["bf16x9", "fp16x3"])
def test_write_through_a_dlpack_export_is_detected(name):
    w, x = sp.asarray(randn(6, 6), dtype=name), sp.asarray(randn(6, 2), dtype=name)
    view = w[1:, ::-1]
    w @ x, view.T @ w[1:]
    exported = np.from_dlpack(w)
    assert product_is_fresh(w, x)
    foreign_write(exported, (2, 3), 7.0)
    assert w[2, 3] == 7.0
    assert product_is_fresh(w, x) and product_is_fresh(view.T, w[1:])
    copied = w.copy()
    foreign_write(exported, (0, 0), -1.0)
    assert product_is_fresh(copied, x) and product_is_fresh(w, x) and copied[0, 0] != -1.0


def test_unflagged_dlpack_export_of_the_first_protocol_version_is_writable_and_watched():
    w = sp.asarray(randn(2, 2), dtype="bf16x9")
    capsule = w.__dlpack__()                           # no max_version: no read-only flag to set
    assert type(capsule).__name__ == "PyCapsule"
    exported = np.from_dlpack(w)
    w @ w
    foreign_write(exported, (1, 1), 0.5)
    assert product_is_fresh(w, w)


def test_write_by_a_consumer_that_ignores_the_read_only_flag_is_detected():
    torch = pytest.importorskip("torch")
    w, x = sp.asarray(randn(5, 5), dtype="bf16x6"), sp.asarray(randn(5, 3), dtype="bf16x6")
    w @ x
    tensor = torch.from_dlpack(w)                      # torch drops DLPack's read-only flag
    tensor[1, 1] = 2.0
    assert w[1, 1] == 2.0 and product_is_fresh(w, x)
    tensor.zero_()
    assert np.array_equal(np.asarray(w @ x), np.zeros((5, 3), np.float32))


def test_terms_follow_writes_through_exports():
    w = sp.asarray(np.float32([[1.5, 2.0]]), dtype="bf16x9")
    exported = np.from_dlpack(w)
    before = w.terms
    foreign_write(exported, (0, 0), 3.0)
    scale = 2.0 ** -float(split(np.float32([[3.0, 2.0]]), "bf16x9").exponent)     # the pow2 split's one scale
    assert w.terms is not before and np.float32(sum(t.astype(np.float64) for t in w.terms)[0, 0] / scale) == 3.0


# -- copy, pickle ----------------------------------------------------------------------------------

@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy, lambda a: a.copy()])
def test_copies_own_their_storage_regression(copier):
    a = sp.asarray(randn(3, 3), dtype="tf32x3")
    b = copier(a)
    assert type(b) is sp.SplitArray and b.dtype == a.dtype and np.array_equal(b.to_numpy(), a.to_numpy())
    b[0, 0] = 9.0
    assert a[0, 0] != 9.0
    assert not np.shares_memory(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("take", [lambda a: a, lambda a: a[0], lambda a: a.T, lambda a: a.reshape(2, 6),
                                  lambda a: a[::-1, 1:], lambda a: a.mT, lambda a: np.expand_dims(a, 0)],
                         ids=["array", "row", "T", "reshape", "slice", "mT", "expand_dims"])
def test_pickle_round_trips_arrays_and_views_regression(take):
    a = sp.asarray(randn(3, 4), dtype="fp16x3")
    view = take(a)
    back = pickle.loads(pickle.dumps(view))
    assert type(back) is sp.SplitArray and back.dtype == view.dtype and back.device == "cpu"
    assert np.array_equal(back.to_numpy(), view.to_numpy())
    back[...] = 0
    assert a.to_numpy().any()


@pytest.mark.parametrize("write_copy", [True, False], ids=["write-copy", "write-original"])
def test_pickle_with_out_of_band_buffers_is_a_copy_regression(write_copy):
    a, x = sp.asarray(randn(4, 4), dtype="bf16x9"), sp.asarray(randn(4, 2), dtype="bf16x9")
    a @ x
    buffers = []
    data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
    back = pickle.loads(data, buffers=buffers)
    assert buffers and not np.shares_memory(np.asarray(back), np.asarray(a))
    (back if write_copy else a)[0, 0] = 100.0
    assert (a[0, 0] == 100.0) != write_copy and (back[0, 0] == 100.0) == write_copy
    assert product_is_fresh(a, x) and product_is_fresh(back, x)


@pytest.mark.parametrize("take", [lambda a: a, lambda a: a.T, lambda a: a[1:]], ids=["array", "T", "slice"])
def test_pickle_out_of_band_buffers_are_read_only_regression(take):
    """Protocol 5 handed ``buffer_callback`` writable buffers of the storage and of the cached parts:
    writing through one changed the array with its split left stale."""
    a, x = sp.asarray(randn(4, 4), dtype="bf16x9"), sp.asarray(randn(4, 2), dtype="bf16x9")
    view = take(a)
    view @ x
    before = a.to_numpy()
    buffers = []
    data = pickle.dumps(view, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) > 1                               # the value and the cached parts
    for buffer in buffers:
        assert buffer.raw().readonly
        with pytest.raises(ValueError, match="read-only"):
            np.frombuffer(buffer.raw(), np.uint8)[:] = 7
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag to True"):
            np.frombuffer(buffer, np.uint8).flags.writeable = True
    assert np.array_equal(a.to_numpy(), before) and product_is_fresh(view, x)
    back = pickle.loads(data, buffers=buffers)
    assert np.array_equal(back.to_numpy(), view.to_numpy()) and not np.shares_memory(np.asarray(back), np.asarray(a))
    back[...] = 1.0
    assert np.array_equal(a.to_numpy(), before) and product_is_fresh(back, x)
    a[...] = 2.0
    assert np.array_equal(back.to_numpy(), np.ones(view.shape, np.float32)) and product_is_fresh(view, x)


# -- scalars, containment, truth, comparisons --------------------------------------------------------

def test_scalar_conversions_follow_numpy():
    a = sp.asarray([[2.75, -1.0]], dtype="bf16x9")
    x = a.to_numpy()
    for convert in (float, int, complex):
        assert convert(a[0, :1][0:1].reshape(())) == convert(x[0, 0])
        with pytest.raises(TypeError, match=r"^only 0-dimensional arrays can be converted"):
            convert(a)
    assert a.item(1) == -1.0 and type(a.item(0)) is float and a.tolist() == x.tolist()
    with pytest.raises(TypeError, match=r"^only integer scalar arrays can be converted to a scalar index"):
        operator.index(a[0, :1].reshape(()))
    with pytest.raises(TypeError, match=r"^only integer scalar arrays"):
        range(10)[a[0, :1].reshape(())]


def test_contains_any_all_and_truth_follow_numpy():
    a = sp.asarray([[1.0, 5.0], [0.0, -2.0]], dtype="tf32x3")
    assert 5 in a and -2.0 in a and 3 not in a and np.nan not in a
    assert a.any() and not a.all() and a[0].all() and type(a.any()) is np.bool_
    assert np.array_equal(a.any(axis=1), [True, True]) and np.array_equal(a.all(axis=0), [False, True])
    with pytest.raises(ValueError, match=r"Use a.any\(\) or a.all\(\)"):
        bool(a)


def test_comparison_with_none_or_a_string_is_elementwise_unequal():
    a = sp.asarray([[1.0, 2.0]], dtype="bf16")
    for other in (None, "1.0"):
        assert np.array_equal(a == other, np.zeros((1, 2), bool))
        assert np.array_equal(a != other, np.ones((1, 2), bool))
    assert None not in a


def test_matmul_of_two_vectors_is_a_float32_scalar():
    u, v = sp.asarray([1.0, 2.0], dtype="bf16x9"), sp.asarray([3.0, 4.0], dtype="bf16x9")
    for got in (sp.matmul(u, v), u @ v, np.matmul(u, v), np.dot(u, v), np.vdot(u, v), np.inner(u, v)):
        assert type(got) is np.float32 and got == 11.0


# -- a.dtype ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sp.dtypes("float32"))
def test_dtype_is_the_scheme_with_numpys_storage_dtype(name):
    a = sp.zeros((2, 3), dtype=name)
    d = a.dtype
    assert str(d) == name and d == name and d == name.upper() and d != "float32"
    assert all(d == alias for alias in d.aliases)
    assert d.itemsize == a.itemsize == 4 and a.nbytes == 24 and a.strides == (12, 4)
    assert np.dtype(d) == np.float32 and d == np.dtype(np.float32) and d == np.float32
    assert np.zeros(2, dtype=d).dtype == np.float32
    assert {d: 1}[sp.dtype(name)] == 1 and len({d, *map(sp.dtype, sp.dtypes("float32"))}) == len(sp.dtypes("float32"))


@pytest.mark.parametrize("name", sp.dtypes("float32"))
def test_dtype_hashes_as_the_float32_it_equals_regression(name):
    """``x.dtype in {xp.float32}`` was False: the scheme equals float32 but hashed as its name."""
    d = sp.asarray([1.0], dtype=name).dtype
    assert hash(d) == hash(np.dtype(np.float32))
    assert d in {np.dtype(np.float32)} and d in {sp.array_api.float32: 1} and np.dtype(np.float32) in {d}
    assert all((d == sp.dtype(other)) == (other == name) for other in sp.dtypes("float32"))


def test_real_imag_conj_round_clip_fill_flatten():
    x = randn(3, 4)
    a = sp.asarray(x, dtype="bf16x6")
    assert a.real.dtype == a.dtype and np.shares_memory(np.asarray(a.real), np.asarray(a))
    assert np.array_equal(a.imag.to_numpy(), np.zeros_like(x)) and a.imag.dtype == a.dtype
    assert np.array_equal(a.conj().to_numpy(), x) and not np.shares_memory(np.asarray(a.conj()), np.asarray(a))
    assert np.array_equal(a.round(1).to_numpy(), x.round(1)) and np.array_equal(a.clip(-0.5, 0.5).to_numpy(), x.clip(-0.5, 0.5))
    flat = a.flatten()
    flat[0] = 3.0
    assert a[0, 0] == x[0, 0] and flat.shape == (12,)
    a.fill(2.0)
    assert np.array_equal(a.to_numpy(), np.full_like(x, 2.0))
    with pytest.raises(TypeError, match=r"^__setitem__: value holds a value that float32 cannot hold"):
        a.fill(0.1)
