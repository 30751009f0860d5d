"""The scheme table: names, aliases, errors and the identities every record must satisfy."""
import copy
import dataclasses
import pickle
import re

import numpy as np
import pytest

import splitprec as sp
from splitprec.dtypes import FP32_CLASS_PRODUCT_ERROR, cheapest
from splitprec.formats import FORMATS

ALL_DTYPES = sp.dtypes("float32")


def test_registry_has_the_contract_names():
    assert {"tf32", "bf16", "fp16", "tf32x3", "bf16x3", "bf16x6", "bf16x9", "fp16x3"} <= set(ALL_DTYPES)


@pytest.mark.parametrize("spelling, name", [
    ("3xTF32", "tf32x3"), ("TF32x3", "tf32x3"), ("BF16x9", "bf16x9"), ("9xBF16", "bf16x9"),
    ("2xBF16", "bf16x3"), ("bf16X6", "bf16x6"), ("FP16x3", "fp16x3"), ("BF16", "bf16")])
def test_dtype_resolves_known_spellings(spelling, name):
    assert sp.dtype(spelling).name == name
    assert sp.dtype(sp.dtype(spelling)) is sp.dtype(name)


def test_unknown_dtype_lists_the_known_ones():
    listed = ", ".join(repr(n) for n in sp.dtypes())
    with pytest.raises(ValueError, match=r"^unknown split dtype 'tf32x4'; expected one of " + re.escape(listed)):
        sp.dtype("tf32x4")
    with pytest.raises(TypeError, match=r"^split dtype must be a name"):
        sp.dtype(3)


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_record_identities(name):
    d = sp.dtype(name)
    assert d.base in FORMATS and d.format is FORMATS[d.base]
    count = int(name.split("x")[1]) if "x" in name else 1
    assert len(d.products) == count == len(set(d.products))
    assert all(0 <= i < d.terms and 0 <= j < d.terms for i, j in d.products)
    levels = [i + j for i, j in d.products]
    assert levels == sorted(levels, reverse=True), "products must be ordered smallest first"
    assert d.products[-1] == (0, 0)
    assert d.part_bound == 2.0 ** -d.format.p
    assert d.split_error in (0.0, 2.0 ** -(d.terms * d.format.p))
    assert d.target == "float32"


def test_split_error_is_zero_exactly_when_the_parts_cover_24_bits():
    assert sp.dtype("bf16x9").split_error == sp.dtype("bf16x6").split_error == 0.0
    assert sp.dtype("tf32x3").split_error == 2.0 ** -22
    assert sp.dtype("bf16x3").split_error == 2.0 ** -16


def test_product_errors_match_the_design_figures():
    assert sp.dtype("bf16x9").product_error == 0.0
    assert 3 * 2.0 ** -22 < sp.dtype("tf32x3").product_error < 3.01 * 2.0 ** -22
    assert 2.0 ** -23 < sp.dtype("bf16x6").product_error < 1.01 * 2.0 ** -23


def test_fp32_class_membership_and_cheapest():
    fp32 = {n for n in ALL_DTYPES if sp.dtype(n).fp32_class}
    assert fp32 == {"tf32x3", "bf16x6", "bf16x9"}
    assert all(sp.dtype(n).product_error <= FP32_CLASS_PRODUCT_ERROR for n in fp32)
    assert cheapest("fp32").name == "bf16x6"
    with pytest.raises(ValueError, match=r"^unknown precision 'fp16'"):
        cheapest("fp16")


# jax.lax.DotAlgorithmPreset's members (jax 0.10.2): each names a scheme or has no splitprec equivalent.
XLA_PRESETS = {
    "BF16_BF16_F32": "bf16", "BF16_BF16_F32_X3": "bf16x3", "BF16_BF16_F32_X6": "bf16x6",
    "BF16_BF16_F32_X9": "bf16x9", "TF32_TF32_F32": "tf32", "TF32_TF32_F32_X3": "tf32x3", "F16_F16_F32": "fp16",
    "DEFAULT": None, "ANY_F8_ANY_F8_F32": None, "ANY_F8_ANY_F8_F32_FAST_ACCUM": None, "ANY_F8_ANY_F8_ANY": None,
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM": None, "F16_F16_F16": None, "BF16_BF16_BF16": None, "F32_F32_F32": None,
    "F64_F64_F64": None,
}


@pytest.mark.parametrize("preset, name", [(p, n) for p, n in XLA_PRESETS.items() if n])
def test_xla_preset_names_resolve_to_the_scheme_they_mean(preset, name):
    d = sp.dtype(preset)
    assert d is sp.dtype(name) is sp.dtype(preset.lower())
    lhs, _, accumulation, *count = preset.split("_")
    assert d.base == {"BF16": "bf16", "TF32": "tf32", "F16": "fp16"}[lhs] and accumulation == "F32"
    assert len(d.products) == (int(count[0][1:]) if count else 1)


@pytest.mark.parametrize("preset, reason", [
    ("F64_F64_F64", "it means native float64 products; the fp64-class schemes are ozaki2_int8x<N>"),
    ("ANY_F8_ANY_F8_F32", "its products are float8, and splitprec has no float8 parts"),
    ("BF16_BF16_BF16", "it accumulates in bf16; splitprec accumulates in float32"),
    ("F32_F32_F32", r"it means native float32 products \(numpy\.matmul, cupy\.matmul\)"),
    ("default", "it leaves the algorithm to the compiler"),
])
def test_xla_presets_without_an_equivalent_are_refused_with_the_reason(preset, reason):
    with pytest.raises(ValueError, match=rf"^split dtype '{preset}' is an XLA DotAlgorithmPreset with no "
                                         rf"splitprec equivalent: {reason}; expected one of 'bf16'"):
        sp.dtype(preset)


def test_every_unmatched_preset_is_refused():
    for preset in (p for p, n in XLA_PRESETS.items() if n is None):
        with pytest.raises(ValueError, match="no splitprec equivalent"):
            sp.dtype(preset)


def test_jax_preset_members_are_the_listed_ones_and_resolve():
    jax = pytest.importorskip("jax")
    members = jax.lax.DotAlgorithmPreset.__members__
    assert set(members) == set(XLA_PRESETS)
    assert sp.dtype(members["BF16_BF16_F32_X6"]) is sp.dtype("bf16x6")


def test_matmul_takes_a_preset_name_as_dtype():
    import numpy as np
    a = np.float32([[1, 2], [3, 4]])
    np.testing.assert_array_equal(sp.matmul(a, a, dtype="TF32_TF32_F32_X3"), sp.matmul(a, a, dtype="tf32x3"))


def test_cheapest_checks_precision_before_its_cache():
    with pytest.raises(TypeError, match=r"^precision must be 'fp32' or 'fp64' \(a str\), got \['fp32'\]"):
        cheapest(["fp32"])


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_pickled_and_copied_scheme_is_the_registered_one_regression(name):
    """A pickled or deep-copied scheme came back as a second record of the same name, which compared
    unequal to its own name (``pickle.loads(pickle.dumps(d)) == "bf16x9"`` was False): dask's process
    schedulers pickle the dtype of every chunk."""
    d = sp.dtype(name)
    for back in (pickle.loads(pickle.dumps(d)), copy.deepcopy(d), copy.copy(d)):
        assert back is d and back == name.upper() and back != "no such scheme"
    variant = dataclasses.replace(d, rounding="rz")                 # unregistered: keeps its fields
    assert pickle.loads(pickle.dumps(variant)).rounding == "rz"


def test_dtype_of_a_non_string_names_the_value_regression():
    """``sp.dtype(np.float32)`` said only "got type"; the message names the value and its type."""
    with pytest.raises(TypeError, match=r"^split dtype must be a name \(str\) or SplitDType, got "
                                        r"<class 'numpy.float32'> of type type$"):
        sp.dtype(np.float32)


@pytest.mark.parametrize("name", sp.dtypes())
def test_every_scheme_record_behaves_like_split_dtype_regression(name):
    """The fp64 records (``Ozaki2DType``, ``Ozaki2AdaptiveDType``) compared field by field as plain
    dataclasses: ``sp.dtype("ozaki2_int8x14") == "OZAKI2_INT8X14"`` was False, ``str`` gave the
    full repr, ``np.dtype(d)`` raised, and a pickled or copied record was a second object. Every
    record now equals its names in any case and numpy's dtype of its target, hashes as that dtype,
    prints as its name and pickles as the registered record."""
    d, target = sp.dtype(name), np.dtype(sp.dtype(name).target)
    other = np.float64 if target == np.float32 else np.float32
    assert str(d) == name and repr(d).startswith(f"{type(d).__name__}(name={name!r}")
    assert all(d == spelling for spelling in (name, name.upper(), *d.aliases, *map(str.upper, d.aliases)))
    assert d != "no such scheme" and d != "float32"
    assert np.dtype(d) == target and d == target and d == target.type and d != other and d.itemsize == target.itemsize
    assert hash(d) == hash(target) and {d: 1}[sp.dtype(name.upper())] == 1
    for back in (pickle.loads(pickle.dumps(d)), copy.deepcopy(d), copy.copy(d)):
        assert back is d and back == name.upper()
    variant = dataclasses.replace(d, aliases=("variant",))          # unregistered: keeps its fields
    back = pickle.loads(pickle.dumps(variant))
    assert back is not d and back.aliases == ("variant",) and back == d


def test_a_target_or_device_of_the_wrong_type_is_a_typeerror_regression():
    with pytest.raises(TypeError, match=r"^dtypes: target must be None or a str, got 3"):
        sp.dtypes(3)
    with pytest.raises(TypeError, match=r"^asarray: device must be None, 'cpu' or 'gpu', got 3"):
        sp.asarray(np.ones(2, np.float32), device=3)
