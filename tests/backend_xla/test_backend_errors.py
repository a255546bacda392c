"""Every way loading can fail gives one clear NetworkError naming the file (never a crash)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import backend_xla
from backend_xla import NetworkError, OptionError, UnsupportedOpError
from backend_xla.buckets import batch_sizes
from backend_xla.options import parse_options
from xla_testutil import TEST_OPTIONS, need_shared


def _tiny_lc0_model(op: str = "Relu", batch_dim="batch", domain: str = "") -> onnx.ModelProto:
    """An lc0-shaped graph: planes -> Flatten -> act -> ReduceSum -> MatMul -> policy, plus a
    value head. The sum keeps the weights small (a 7168 x 1858 policy matrix made and copied
    about 300 MB of pages for each of the twenty models built here: 4 s of system time)."""
    planes = helper.make_tensor_value_info("/input/planes", onnx.TensorProto.FLOAT,
                                           [batch_dim, 112, 8, 8])
    w = numpy_helper.from_array(np.full((1, 1858), 1e-3, np.float32), "w")
    wv = numpy_helper.from_array(np.full((1, 1), 1e-3, np.float32), "wv")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [
        helper.make_node("Flatten", ["/input/planes"], ["flat"], name="flatten"),
        helper.make_node(op, ["flat"], ["act"], name="act_node", domain=domain),
        helper.make_node("ReduceSum", ["act", "axes"], ["total"], name="sum", keepdims=1),
        helper.make_node("MatMul", ["total", "w"], ["/output/policy"], name="policy"),
        helper.make_node("MatMul", ["total", "wv"], ["v"], name="value_mm"),
        helper.make_node("Tanh", ["v"], ["/output/value"], name="value"),
    ]
    outs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None)
            for n in ("/output/policy", "/output/value")]
    graph = helper.make_graph(nodes, "tiny", [planes], outs, [w, wv, axes])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_tiny_model_loads(tmp_path):
    net = backend_xla.load_network(_tiny_lc0_model(), TEST_OPTIONS)
    out = net.evaluate(np.ones((3, 112, 8, 8), np.float32))
    # A 7168-term f32 sum: its rounding depends on how XLA blocks the reduction.
    np.testing.assert_allclose(out.policy, np.full((3, 1858), 7168e-3 * 1), rtol=1e-4)
    np.testing.assert_allclose(out.q, np.tanh(np.full(3, 7.168)), rtol=1e-5)
    assert not net.has_wdl and not out.d.any()


def test_not_onnx(tmp_path):
    path = tmp_path / "net.onnx"
    path.write_text("this is not a network")
    with pytest.raises(NetworkError, match=r"net\.onnx.*not a valid ONNX"):
        backend_xla.load_network(path)


def test_truncated(tmp_path):
    data = need_shared("maia", "maia-1100.onnx").read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(NetworkError, match=r"cut\.onnx.*not a valid ONNX"):
        backend_xla.load_network(path)


def test_missing_file(tmp_path):
    with pytest.raises(NetworkError, match="no such network file"):
        backend_xla.load_network(tmp_path / "absent.onnx")


def test_unsupported_op_names_op_node_file_and_supported(tmp_path):
    path = tmp_path / "odd.onnx"
    onnx.save(_tiny_lc0_model(op="Hardmax"), path)
    with pytest.raises(UnsupportedOpError) as info:
        backend_xla.load_network(path)
    msg = str(info.value)
    assert "odd.onnx" in msg and "Hardmax" in msg and "act_node" in msg and "Conv" in msg


def test_foreign_domain_is_unsupported():
    with pytest.raises(UnsupportedOpError, match="com.microsoft"):
        backend_xla.load_network(_tiny_lc0_model(op="Relu", domain="com.microsoft"))


def test_missing_input_and_output():
    model = _tiny_lc0_model()
    model.graph.input[0].name = "planes"
    with pytest.raises(NetworkError, match="expected input '/input/planes'"):
        backend_xla.load_network(model)
    model = _tiny_lc0_model()
    del model.graph.output[1]
    with pytest.raises(NetworkError, match="/output/wdl"):
        backend_xla.load_network(model)


def test_non_static_shape():
    model = _tiny_lc0_model()
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "height"
    with pytest.raises(NetworkError, match="expected a static size for dim 2"):
        backend_xla.load_network(model, TEST_OPTIONS)


def test_external_data_outside_directory_is_refused(tmp_path):
    model = _tiny_lc0_model()
    init = model.graph.initializer[0]
    init.ClearField("raw_data")
    init.data_location = onnx.TensorProto.EXTERNAL
    init.external_data.add(key="location", value="../../etc/passwd")
    path = tmp_path / "ext.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(NetworkError, match=r"ext\.onnx.*outside the model's directory"):
        backend_xla.load_network(path)


def test_external_data_inside_directory_loads(tmp_path):
    path = tmp_path / "ext.onnx"
    onnx.save(_tiny_lc0_model(), path, save_as_external_data=True, location="weights.bin",
              size_threshold=1024)
    net = backend_xla.load_network(path, TEST_OPTIONS)
    assert net.evaluate(np.zeros((1, 112, 8, 8), np.float32)).policy.shape == (1, 1858)


def test_external_data_of_the_wrong_size_is_refused_before_it_is_read(tmp_path):
    """A reference without a length would have onnx read its whole file (gigabytes, for a
    sparse one) before the reshape fails: the size the shape needs is checked first."""
    path = tmp_path / "ext.onnx"
    onnx.save(_tiny_lc0_model(), path, save_as_external_data=True, location="weights.bin",
              size_threshold=1024)
    model = onnx.load(path, load_external_data=False)
    init = next(t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL)
    for entry in list(init.external_data):
        if entry.key in ("offset", "length"):
            init.external_data.remove(entry)
    big = tmp_path / "big.bin"
    with big.open("wb") as f:
        f.truncate(1 << 30)  # sparse: a gigabyte of zeros on no disk
    next(e for e in init.external_data if e.key == "location").value = "big.bin"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(NetworkError, match=rf"ext\.onnx: initializer {init.name!r}: expected "
                       rf"\d+ bytes of external data .* in big\.bin, got {1 << 30}"):
        backend_xla.load_network(path)


def test_bad_planes_shape():
    net = backend_xla.load_network(_tiny_lc0_model(), TEST_OPTIONS)
    with pytest.raises(NetworkError, match=r"expected planes \[N>=1, 112, 8, 8\], got shape \[2, 112, 64\]"):
        net.evaluate(np.zeros((2, 112, 64), np.float32))


@pytest.mark.parametrize("text,pattern", [
    ("bogus=1", "unknown backend option 'bogus'"),
    ("max_batch=0", r"max_batch: expected an integer in \[1, 65536\], got 0"),
    ("max_batch=lots", "max_batch: expected an integer"),
    ("data_type=f64", "data_type: expected one of f32, f16, bf16, got 'f64'"),
    ("batch_buckets=", "batch_buckets: expected"),
    ("steps", "expected steps=VALUE"),
    ("device=7", "device: expected indices below"),
])
def test_option_errors(text, pattern):
    with pytest.raises(OptionError, match=pattern):
        backend_xla.load_network(_tiny_lc0_model(), text)


def test_option_parsing_and_batch_sizes():
    values = parse_options("datatype=bf16, max_batch=100,steps=4")
    assert values["data_type"] == "bf16"
    assert batch_sizes(values) == [25, 50, 75, 100]  # lc0: max_batch * (i + 1) / steps
    assert batch_sizes(parse_options("")) == list(range(32, 513, 32))
    # The search's minibatch (7 on a CPU) and twice it get buckets of their own, exactly, below
    # max_batch/steps: a padded row costs as much as a real one.
    assert batch_sizes(parse_options(""), 7) == [7, 14] + list(range(32, 513, 32))
    assert batch_sizes(parse_options(""), 16) == [16] + list(range(32, 513, 32))
    assert batch_sizes(parse_options(""), 256) == list(range(32, 513, 32))
    assert batch_sizes(parse_options("batch_buckets=4;64"), 7) == [4, 64]
    assert batch_sizes(parse_options("batch_buckets=256;1;32,max_batch=8")) == [1, 32, 256]


def test_background_compile_warmup_and_splitting():
    """The size that holds the CPU minibatch of 7 compiled at load, no other unless a batch needs
    it; warmup compiles every size and reports progress; batches are padded to a ready size or
    split, and results don't depend on the split. background_compile=2 compiles the others in the
    background at once."""
    eager = backend_xla.load_network(
        _tiny_lc0_model(), "batch_buckets=2;4;8,cache_dir=none,background_compile=2")
    assert 8 in eager.ready_sizes
    eager.warmup()
    assert eager.ready_sizes == [2, 4, 8] and not eager.compiling
    net = backend_xla.load_network(_tiny_lc0_model(), "batch_buckets=2;4;8,cache_dir=none")
    assert net.ready_sizes == [8] and net.load_size == 8 and not net.compiling
    seen = []
    net.warmup(lambda size, ready, total: seen.append((size, ready, total)))
    assert net.ready_sizes == [2, 4, 8] and seen[-1][1:] == (3, 3)
    planes = np.random.default_rng(0).random((19, 112, 8, 8)).astype(np.float32)
    whole = net.evaluate(planes)  # 8 + 8 + 4 (padded from 3)
    rows = [net.evaluate(planes[i:i + 1]) for i in (0, 9, 18)]
    for i, row in zip((0, 9, 18), rows):
        np.testing.assert_allclose(row.policy[0], whole.policy[i], rtol=1e-6)
    assert len(whole) == 19


def test_docs_list_every_option():
    from backend_xla.options import OPTIONS
    from conftest import REPO_ROOT

    docs = (REPO_ROOT / "docs" / "backend.md").read_text()
    missing = [o.name for o in OPTIONS if f"`{o.name}`" not in docs]
    assert not missing, f"expected docs/backend.md to document every option, got none for {missing}"


def test_duplicate_backend_option_is_an_error():
    with pytest.raises(OptionError, match="max_batch given twice"):
        parse_options("max_batch=64,steps=4,max_batch=128")
    with pytest.raises(OptionError, match="data_type given twice"):
        parse_options("datatype=bf16,data_type=f32")  # an alias counts as the same key


def test_hlo_proto_dump_dir_writes_one_module_per_batch_size(tmp_path):
    """lc0's hlo_proto_dump_dir: each compiled batch size's HLO module proto, which XLA reads
    back as a module whose input is that batch of planes."""
    from jax._src.lib import xla_client

    net = backend_xla.load_network(_tiny_lc0_model(), f"{TEST_OPTIONS},hlo_proto_dump_dir={tmp_path}")
    net.warmup()
    files = {int(f.name.split("-batch")[1].split(".")[0]): f for f in tmp_path.glob("*.hlo.pb")}
    assert sorted(files) == sorted(net.sizes)
    for batch, f in files.items():
        text = xla_client.XlaComputation(f.read_bytes()).as_hlo_text()
        assert f"f32[{batch},112,8,8]" in text


def test_plugin_path_errors_name_what_was_looked_for(tmp_path):
    """plugin_path as lc0 documents it: a path must exist; a bare name is looked up as dlopen
    does; a library that is not a PJRT plugin is refused with the file JAX tried."""
    from backend_xla.runtime import find_library

    with pytest.raises(OptionError, match="no such file"):
        find_library(str(tmp_path / "missing.so"))
    with pytest.raises(OptionError, match="not found where dlopen looks"):
        find_library("libxlazero_no_such_plugin.so")
    assert find_library("libm.so.6").endswith("/libm.so.6")  # found as dlopen finds it


def test_hlo_proto_dump_dir_that_cannot_be_written_names_the_option(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(OptionError, match=r"hlo_proto_dump_dir: cannot write to"):
        backend_xla.load_network(_tiny_lc0_model(), f"{TEST_OPTIONS},hlo_proto_dump_dir={blocker / 'sub'}")
