"""No silent traps in the model of a layer (issue 23, item 4): a missing ffn_hidden or vocab is an
error that says where to find it, named models carry their published numbers, and a model that does
not fit in HBM is an error (or, asked for, a warning kept with the results), never just a time."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli.app import _register, app
from simulator.errors import InputError
from simulator.topology.builder import build_fabric
from simulator.workloads.attention.memory import footprint, weight_params_per_gpu
from simulator.workloads.attention.model import ModelShape
from simulator.workloads.models import find_preset, preset_names, presets
from simulator.workloads.scenario import (DecodeItem, KvTransferItem, ModelSpec, ScenarioModel, check_on_fabrics,
                                          load_scenario)

ROOT = Path(__file__).resolve().parent.parent
GB200_NVL72 = ROOT / "topologies" / "gb200_nvl72.yaml"
_register()
runner = CliRunner()

L70 = dict(layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128, ffn_hidden=28672, vocab=128256)
"""meta-llama/Meta-Llama-3-70B config.json."""


def _scenario(tmp_path, items: str, top: str = "") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\ntopologies: [{GB200_NVL72}]\nengine: flow\n{top}workloads:\n{items}")
    return path


OVER = """\
  - kind: decode
    name: 70B at tp 1
    model: llama-3-70b
    batch: 64
    context: 8192
    tp: 1
"""
"""Llama-3-70B at tp 1, batch 64, 8k context: 141.1 GB of weights + 171.8 GB of KV cache per GPU."""


# --- the HBM footprint -------------------------------------------------------------------------------

def test_llama3_70b_tp1_batch64_8k_needs_313_GB():
    f = footprint(ModelShape(batch=64, context=8192, tp=1, **L70), "decode", hbm_bytes=186e9)
    embed = 2 * 128256 * 8192 * 2  # embedding + LM head, vocab x hidden each: 2.1 G parameters, bf16
    assert f["embedding_and_head_B"] == embed == pytest.approx(4.2e9, rel=0.01)
    layer = 8192 * (64 + 2 * 8) * 128 + 64 * 128 * 8192 + 3 * 8192 * 28672  # QKV, O, gate+up+down
    assert f["weights_B"] == 80 * layer * 2 + embed == pytest.approx(141.1e9, rel=1e-3)
    assert f["kv_cache_B"] == 64 * 8192 * 80 * 2 * 8 * 128 * 2 == pytest.approx(171.8e9, rel=1e-3)
    # activations: 64 tokens x (2 x hidden + 3 x ffn) bf16 + 64 x vocab fp32 logits
    assert f["activations_B"] == 64 * (2 * 8192 + 3 * 28672) * 2 + 64 * 128256 * 4
    assert f["total_B"] == pytest.approx(313e9, rel=1e-3)
    assert not f["fits"] and f["hbm_B"] == 186e9


def test_weights_split_over_tp_and_kv_heads_replicate_beyond_kv_heads():
    one = footprint(ModelShape(batch=1, context=8192, tp=1, **L70))
    eight = footprint(ModelShape(batch=1, context=8192, tp=8, **L70))
    assert eight["weights_B"] == pytest.approx(one["weights_B"] / 8, rel=1e-12)
    assert eight["kv_cache_B"] == one["kv_cache_B"] / 8
    # tp 16 > 8 KV heads: each GPU keeps one whole KV head (the cache no longer shrinks)
    sixteen = footprint(ModelShape(batch=1, context=8192, tp=16, **L70))
    assert sixteen["kv_cache_B"] == eight["kv_cache_B"]
    # the layer weights agree with ModelShape's count wherever no KV head is replicated
    m = ModelShape(batch=1, context=1, tp=8, **L70)
    assert weight_params_per_gpu(m)["layers"] == pytest.approx(80 * m.weight_params_per_gpu_layer(), rel=1e-12)


def test_prefill_activations_scale_with_the_prompt_and_ring_attention_holds_a_slice():
    m = ModelShape(batch=1, context=4096, tp=8, **L70)
    pre, dec = footprint(m, "prefill"), footprint(m, "decode")
    assert pre["weights_B"] == dec["weights_B"] and pre["kv_cache_B"] == dec["kv_cache_B"]
    per_token = (2 * 8192 + 3 * 28672 / 8) * 2  # the MLP is the widest point at tp 8
    assert pre["activations_B"] - dec["activations_B"] == pytest.approx((4096 - 1) * per_token)
    ring = footprint(ModelShape(batch=1, context=131072, tp=1, **L70), "ring_attention", cp=8)
    # 16k of the 128k tokens per GPU, plus two blocks of one layer in flight
    assert ring["kv_cache_B"] == (80 + 2) * 16384 * 2 * 8 * 128 * 2


@pytest.mark.parametrize("name,published", [("llama-3-8b", 8.03e9), ("llama-3-70b", 70.55e9),
                                            ("llama-3.1-405b", 405.85e9)])
def test_presets_give_the_published_parameter_counts(name, published):
    # model cards: 8.03B, 70.6B, 405.9B parameters (norm weights, under 0.01 %, left out)
    p = presets()[name]
    m = ModelShape(batch=1, context=1, **{k: getattr(p, k) for k in L70})
    params = weight_params_per_gpu(m)
    assert params["layers"] + params["embedding_and_head"] == pytest.approx(published, rel=2e-3)


def test_every_preset_has_a_source_and_a_consistent_shape():
    assert {"llama-3-8b", "llama-3-70b", "llama-3.1-405b"} <= set(preset_names())
    for name, p in presets().items():
        assert "config.json" in p.source, name
        # DeepSeek-V3's 128 heads of 128 project back to hidden 7168 (o_proj 16384 -> 7168)
        assert p.heads * p.head_dim == p.hidden or name == "deepseek-v3-like", name
        assert p.heads % p.kv_heads == 0, name
    assert presets()["llama-3-70b"].fields() == {**L70, "source": presets()["llama-3-70b"].source}
    assert find_preset("META-LLAMA/Meta-Llama-3-70B")[0] == "llama-3-70b"
    assert find_preset("llama-4-1t") is None


# --- the model of a scenario item ------------------------------------------------------------------

def test_a_preset_fills_every_field_and_overrides_win():
    m = ModelSpec.model_validate("llama-3-70b")
    assert {k: getattr(m, k) for k in L70} == L70 and "Meta-Llama-3-70B config.json" in m.source
    fp8 = ModelSpec.model_validate({"preset": "llama-3-70b", "dtype": "fp8", "layers": 4})
    assert (fp8.dtype, fp8.layers, fp8.ffn_hidden) == ("fp8", 4, 28672)
    assert fp8.source.endswith("layers overridden in the scenario")


def test_shape_carries_ffn_hidden_and_vocab():
    item = DecodeItem.model_validate({"kind": "decode", "name": "d", "model": "llama-3-8b", "context": 8, "tp": 2})
    shape = item.shape(2)
    assert (shape.ffn_hidden, shape.vocab, shape.tp) == (14336, 128256, 2)


def test_missing_ffn_hidden_says_what_it_is_and_where_to_find_it(tmp_path):
    path = _scenario(tmp_path, """\
  - kind: prefill
    name: p
    model: {layers: 80, hidden: 8192, heads: 64, kv_heads: 8, head_dim: 128, vocab: 128256}
    context: 1024
    tp: 8
""")
    with pytest.raises(InputError) as err:
        load_scenario(path)
    assert (err.value.line, err.value.field) == (7, "workloads[0].model")
    assert err.value.message.startswith("missing ffn_hidden (the MLP inner width: config.json intermediate_size)")
    assert "model: llama-3-70b" in err.value.message
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{path}:7: workloads[0].model: missing ffn_hidden" in result.output


def test_missing_vocab_is_an_error_too_but_a_kv_transfer_needs_neither(tmp_path):
    shape = {"layers": 80, "hidden": 8192, "heads": 64, "kv_heads": 8, "head_dim": 128}
    with pytest.raises(Exception, match="missing vocab .*config.json vocab_size"):
        ModelSpec.model_validate({**shape, "ffn_hidden": 28672})
    kv = KvTransferItem.model_validate({"kind": "kv_transfer", "name": "kv", "model": shape, "context": 256})
    assert (kv.model.ffn_hidden, kv.model.vocab) == (0, 0)
    # ffn_hidden: 0 written out is a model without an MLP, said, not assumed
    assert ModelSpec.model_validate({**shape, "ffn_hidden": 0, "vocab": 0}).ffn_hidden == 0


def test_an_unknown_model_lists_the_known_ones_with_the_closest(tmp_path):
    path = _scenario(tmp_path, """\
  - kind: decode
    name: d
    model: llama-3-70
    context: 1024
    tp: 8
""")
    with pytest.raises(InputError) as err:
        load_scenario(path)
    assert (err.value.line, err.value.field) == (7, "workloads[0].model")
    assert "unknown model 'llama-3-70'; choose llama-3-8b, llama-3-70b" in err.value.message
    assert "did you mean 'llama-3-70b'?" in err.value.message


# --- the HBM check before a run --------------------------------------------------------------------

def test_a_model_that_does_not_fit_is_an_error_at_its_line(tmp_path):
    path = _scenario(tmp_path, OVER)
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("fabricsim:")]
    assert line == (f"fabricsim: {path}:5: workloads[0]: needs 312.9 GB per GPU (weights 141.1, KV cache 171.8, "
                    f"activations 0.046) but gb200 has 186 GB (on gb200_nvl72.yaml); raise tp, lower batch or "
                    f"context, or set allow_oversubscribe: true")


def test_the_check_runs_without_a_file_too():
    item = DecodeItem.model_validate({"kind": "decode", "name": "d", "model": "llama-3-70b", "batch": 64,
                                      "context": 8192, "tp": 1})
    scenario = ScenarioModel(name="s", topologies=[str(GB200_NVL72)], workloads=[item])
    fabric = build_fabric(GB200_NVL72)
    with pytest.raises(InputError, match="needs 312.9 GB per GPU"):
        check_on_fabrics(scenario, [fabric], [GB200_NVL72])
    fits = item.model_copy(update={"tp": 2})
    assert check_on_fabrics(scenario.model_copy(update={"workloads": [fits]}), [fabric], [GB200_NVL72]) == []
    allowed = scenario.model_copy(update={"allow_oversubscribe": True})
    (warning,) = check_on_fabrics(allowed, [fabric, fabric], [GB200_NVL72, GB200_NVL72])  # said once
    assert "needs 312.9 GB" in warning and "running anyway" in warning
    assert allowed._warnings == [warning]


def test_allow_oversubscribe_runs_and_keeps_the_warning_with_the_results(tmp_path):
    path = _scenario(tmp_path, OVER, top="allow_oversubscribe: true\n")
    out = tmp_path / "out.json"
    result = runner.invoke(app, ["run", str(path), "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    (warning,) = data["warnings"]
    assert warning.startswith(f"{path}:6: workloads[0]: needs 312.9 GB per GPU")
    assert "warning:" in result.output and "running anyway" in result.output
    assert data["systems"][0]["rows"][0]["time_us"] > 0


@pytest.mark.parametrize("command", ["run", "compare"])
def test_the_flag_does_what_the_field_does(tmp_path, command):
    path = _scenario(tmp_path, OVER)
    out = tmp_path / "out.json"
    args = (["run", str(path)] if command == "run"
            else ["compare", str(GB200_NVL72), str(GB200_NVL72), "--scenario", str(path)])
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "allow_oversubscribe" in refused.output
    result = runner.invoke(app, [*args, "--allow-oversubscribe", "--json", str(out)])
    assert result.exit_code == 0, result.output
    (warning,) = json.loads(out.read_text())["warnings"]
    assert "needs 312.9 GB per GPU" in warning


def test_ring_attention_checks_the_whole_model_on_each_gpu(tmp_path):
    # 405B at bf16 is 811.7 GB of weights: no context parallelism makes it fit one GPU
    path = _scenario(tmp_path, """\
  - kind: ring_attention
    name: r
    model: llama-3.1-405b
    context: 131072
    gpus: 8
    layers: 1
""")
    with pytest.raises(InputError) as err:
        run_check(path)
    assert "weights 811.7" in err.value.message
    assert "the weights alone do not fit" in err.value.message


def run_check(path: Path) -> None:
    scenario, topologies = load_scenario(path)
    check_on_fabrics(scenario, [build_fabric(t) for t in topologies], topologies)


def test_ring_attention_context_must_split_evenly(tmp_path):
    path = _scenario(tmp_path, """\
  - kind: ring_attention
    name: r
    model: llama-3-8b
    context: 8200
    gpus: 8
    placement: zigzag
""")
    with pytest.raises(InputError) as err:
        load_scenario(path)
    assert (err.value.line, err.value.field) == (8, "workloads[0].context")
    assert "8200 tokens do not split into 16 equal chunks (2 per GPU, zigzag); use a multiple of 16 (8192 or 8208)" \
        == err.value.message


@pytest.mark.parametrize("name, published, rel", [
    ("mixtral-8x7b", 46.7e9, 5e-3),      # Mixtral of Experts (Jiang et al. 2024): 46.7B total parameters
    ("deepseek-v3-like", 671e9, 1e-3),   # DeepSeek-V3 technical report: 671B (its MTP module excluded); MLA
])
def test_moe_presets_hold_their_published_parameter_count(name, published, rel):
    """Every expert, shared expert, router, dense layer, attention (MLA's projections for DeepSeek) and
    embedding counted once (tp 1, ep 1)."""
    from simulator.workloads.serving.scenario import ServedModelSpec

    m = ServedModelSpec.model_validate(name).shape(1, 1)
    params = weight_params_per_gpu(m)
    assert params["layers"] + params["embedding_and_head"] == pytest.approx(published, rel=rel)
    # at ep 8 each GPU holds 1/8 of the routed experts, whole: the routed weights shrink 8x, the rest stays
    m8 = ServedModelSpec.model_validate(name).shape(1, 8)
    one = 3 * m.hidden * m.moe_ffn_hidden
    routed = m.moe_layers * m.experts * one
    assert weight_params_per_gpu(m8)["layers"] == pytest.approx(params["layers"] - routed + routed / 8, rel=1e-9)
