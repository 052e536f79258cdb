"""Named transformer shapes (``simulator/workloads/models.yaml``): published config.json numbers, each
with its source, so a scenario may write ``model: llama-3-70b`` or ``model: {preset: llama-3-70b,
dtype: fp8}`` (a preset with some of its fields overridden) instead of copying seven numbers (and forgetting one).

Names are matched without regard to case; a model's Hugging Face id (``meta-llama/Meta-Llama-3-70B``)
is an alias of its short name.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

MODELS_FILE = Path(__file__).with_name("models.yaml")
SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab")
"""The shape numbers a preset gives (``ModelSpec``'s fields of the same names)."""
MOE_FIELDS = ("experts", "experts_per_token", "moe_ffn_hidden", "shared_experts", "dense_layers")
"""The mixture-of-experts numbers a preset of an MoE model adds (``ServedModelSpec``'s fields)."""
MLA_FIELDS = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "v_head_dim")
"""The multi-head latent attention numbers a preset of an MLA model adds (``ServedModelSpec``'s fields)."""


class ServedShape(BaseModel):
    """The numbers a mixture-of-experts or latent-attention model adds to a shape, as a Hugging Face
    config.json names them (only ``fabricsim serve`` runs such models): a preset's and a serving
    scenario's ``model:`` (``ServedModelSpec``) share them, with their checks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experts: int = Field(default=0, ge=0)
    """Routed experts per MoE layer (config.json num_local_experts / n_routed_experts); 0: dense."""
    experts_per_token: int = Field(default=0, ge=0)
    """Routed experts per token (num_experts_per_tok)."""
    moe_ffn_hidden: int = Field(default=0, ge=0)
    """One expert's inner width (moe_intermediate_size; Mixtral: intermediate_size)."""
    shared_experts: int = Field(default=0, ge=0)
    """Experts every token uses (n_shared_experts)."""
    dense_layers: int = Field(default=0, ge=0)
    """Leading dense layers (first_k_dense_replace)."""
    kv_lora_rank: int = Field(default=0, ge=0)
    """Multi-head latent attention (DeepSeek-V2/V3): the cached latent's rank (kv_lora_rank); 0: GQA
    with kv_heads."""
    q_lora_rank: int = Field(default=0, ge=0)
    """MLA's query compression rank (q_lora_rank; 0: a full query projection)."""
    qk_rope_head_dim: int = Field(default=0, ge=0)
    """MLA: the rotary part of each query and key head (qk_rope_head_dim); head_dim is the rest
    (qk_nope_head_dim)."""
    v_head_dim: int = Field(default=0, ge=0)
    """MLA: a value head's dimension (v_head_dim)."""

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def served_only(self) -> bool:
        """Only ``fabricsim serve`` runs it (a mixture of experts, or latent attention)."""
        return self.is_moe or self.kv_lora_rank > 0

    @model_validator(mode="after")
    def _whole(self) -> "ServedShape":
        """Every number an MoE or MLA model needs, and none without one."""
        if self.kv_lora_rank and not (self.qk_rope_head_dim and self.v_head_dim):
            raise ValueError("latent attention (kv_lora_rank) needs qk_rope_head_dim and v_head_dim (config.json)")
        if not self.kv_lora_rank and (self.q_lora_rank or self.qk_rope_head_dim or self.v_head_dim):
            raise ValueError("q_lora_rank, qk_rope_head_dim and v_head_dim need kv_lora_rank > 0 (latent attention)")
        if self.experts:
            if not 1 <= self.experts_per_token <= self.experts:
                raise ValueError(f"experts_per_token {self.experts_per_token} must be 1 to experts ({self.experts})")
            if not self.moe_ffn_hidden:
                raise ValueError("an MoE model needs moe_ffn_hidden (config.json moe_intermediate_size)")
            layers = getattr(self, "layers", None)
            if layers is not None and self.dense_layers >= layers:
                raise ValueError(f"dense_layers {self.dense_layers} leaves no MoE layer of {layers}")
        elif self.experts_per_token or self.shared_experts or self.dense_layers:
            raise ValueError("experts_per_token, shared_experts and dense_layers need experts > 0")
        return self


class ModelPreset(ServedShape):
    """One named model of models.yaml."""

    aliases: list[str] = []
    """Other names (the Hugging Face id) that select this model."""
    layers: int = Field(ge=1)
    hidden: int = Field(ge=1)
    heads: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    ffn_hidden: int = Field(ge=1)
    vocab: int = Field(ge=1)
    source: str = Field(min_length=1)
    """Where the numbers come from (the model's config.json)."""

    def fields(self) -> dict:
        """The ModelSpec fields this preset sets (shape, MoE numbers of an MoE model, and source)."""
        moe = {k: getattr(self, k) for k in MOE_FIELDS} if self.is_moe else {}
        mla = {k: getattr(self, k) for k in MLA_FIELDS} if self.kv_lora_rank else {}
        return {**{k: getattr(self, k) for k in SHAPE_FIELDS}, **moe, **mla, "source": self.source}


class _ModelsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    models: dict[str, ModelPreset] = Field(min_length=1)


@functools.lru_cache(maxsize=None)
def presets() -> dict[str, ModelPreset]:
    """Every named model, by its short name (validated; an error names models.yaml's line)."""
    from simulator.topology.loader import load_yaml
    from simulator.topology.validate import validate_model

    data, sources = load_yaml(MODELS_FILE)
    return dict(validate_model(_ModelsFile, data, sources).models)


def preset_names() -> list[str]:
    """Short names of the named models, in file order."""
    return list(presets())


def find_preset(name: str) -> tuple[str, ModelPreset] | None:
    """(short name, preset) for ``name`` or one of its aliases, any case; None if unknown."""
    folded = name.strip().lower()
    for key, preset in presets().items():
        if folded == key.lower() or folded in (a.lower() for a in preset.aliases):
            return key, preset
    return None
