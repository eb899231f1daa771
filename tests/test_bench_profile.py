"""bench/gpu_profile.py: a trace's kernels are charged to the model part whose HLO they run."""

import gzip
import json

import pytest

from bench import gpu_profile

# An optimised HLO module as XLA dumps it: a fusion without metadata takes the scope of
# the computation it calls; instructions with metadata carry their own.
HLO = """HloModule jit_train_step, is_scheduled=true

%fused_computation.7 (param_0: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  ROOT %exp.1 = f32[4]{0} exponential(%param_0), metadata={op_name="jit(train_step)/jvp(vanilla_set)/transformer_layer_0/self_attention/softmax"}
}

ENTRY %main.9 (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0), metadata={op_name="args[0]"}
  %loop_add_fusion.201 = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused_computation.7
  %gemm_fusion_dot.5 = bf16[4]{0} fusion(%p), kind=kCustom, calls=%fused_computation.7, metadata={op_name="jit(train_step)/transpose(jvp(head))/dot_general"}
  %multiply.3 = f32[4]{0} multiply(%p, %p), metadata={op_name="jit(train_step)/adam/mul"}
  ROOT %copy.2 = f32[4]{0} copy(%p), metadata={op_name="jit(train_step)/jvp(neuromodulatory_set)/transformer_layer_2/add"}
}
"""


def event(name, hlo_op, dur_us, module="jit_train_step"):
    return {"ph": "X", "pid": 1, "tid": 7, "ts": 0, "dur": dur_us, "name": name,
            "args": {"hlo_module": module, "hlo_op": hlo_op}}


@pytest.fixture
def profile_files(tmp_path):
    events = [
        # inside a CUDA graph: hlo_op is the command buffer, the kernel names the fusion
        event("loop_add_fusion_201", "command_buffer_1", 3000),
        event("gemm_fusion_dot_5", "command_buffer_1", 6000),
        # a library kernel of the graph: no HLO name, counted by kind
        event("nvjet_sm90_tst_128x160_64x5_2x1_v_bz_NNT", "command_buffer_1", 1500),
        # a CPU thunk names its instruction in hlo_op
        event("multiply", "multiply.3", 900),
        event("copy", "copy.2", 600),
        # another module's kernel is not the step's
        event("loop_add_fusion_201", "command_buffer_1", 99000, module="jit_convert"),
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
    ]
    trace = tmp_path / "trace.json.gz"
    with gzip.open(trace, "wt") as f:
        json.dump({"traceEvents": events}, f)
    hlo = tmp_path / "hlo.txt"
    hlo.write_text(HLO)
    return trace, hlo


def test_kernels_are_charged_to_their_part_direction_and_kind(profile_files):
    summary = gpu_profile.summarize(*profile_files, steps=3)

    assert summary["device_ms_per_step"] == pytest.approx(12.0 / 3)
    assert summary["unmatched_ms_per_step"] == pytest.approx(1.5 / 3)
    assert summary["by_part_ms"] == pytest.approx({
        "forward/vanilla_set": 1.0, "backward/head": 2.0, "optimizer/adam": 0.3,
        "forward/neuromodulatory_set": 0.2})
    kinds = summary["by_kind_ms"]
    assert kinds["vanilla_set/softmax_or_norm"] == pytest.approx(1.0)
    assert kinds["head/matmul"] == pytest.approx(2.0)
    assert kinds["unattributed/matmul"] == pytest.approx(0.5)
    assert summary["top_ops"][0] == {
        "op": "gemm_fusion_dot.5", "scope": "jit(train_step)/transpose(jvp(head))/dot_general",
        "ms": 2.0}


@pytest.mark.parametrize("op_name, expected", [
    ("jit(train_step)/transpose(jvp(output_set))/cond/branch_1_fun/block_lm/x",
     ("backward", "output_set")),
    ("jit(train_step)/jvp(vanilla_head)/convert_element_type", ("forward", "vanilla_head")),
    ("jit(train_step)/adam/sqrt", ("optimizer", "adam")),
    ("jit(train_step)/transpose(jvp(jit(take_along_axis)))/broadcast", ("backward", "other")),
    ("", ("forward", "other")),
])
def test_part_of_unwraps_nested_transforms(op_name, expected):
    assert gpu_profile.part_of(op_name) == expected
