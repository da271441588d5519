"""Model shapes: a dataclass and the named presets.

The embedded default is GPT-2 small's shape over a byte vocabulary (SPEC.md,
"The model"); "tiny" is the same architecture shrunk so unit tests run in
milliseconds. Nothing here allocates: the model builds its weights from this.
"""

from dataclasses import dataclass, replace

DTYPE_BYTES = 4  # float32 everywhere


@dataclass(frozen=True)
class ModelConfig:
    n_layer: int = 12
    n_embd: int = 768
    n_head: int = 12
    n_mlp: int = 3072  # width of the MLP's hidden layer (4 x n_embd in GPT-2)
    vocab_size: int = 256  # one token per UTF-8 byte
    n_ctx: int = 4096  # positions with a learned embedding: the context window
    ln_eps: float = 1e-5
    init_std: float = 0.02
    seed: int = 0  # the weights are drawn from this seed

    def __post_init__(self):
        assert self.n_embd % self.n_head == 0, "n_embd must split evenly into heads"

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes one token occupies in the KV cache: K and V, every layer."""
        return 2 * self.n_layer * self.n_embd * DTYPE_BYTES

    @property
    def n_params(self) -> int:
        C, L = self.n_embd, self.n_layer
        per_layer = C * 3 * C + C * C + 2 * C * self.n_mlp
        return L * per_layer + self.vocab_size * C + self.n_ctx * C

    def with_seed(self, seed: int) -> "ModelConfig":
        return replace(self, seed=seed)


PRESETS = {
    "gpt2-small": ModelConfig(),
    "tiny": ModelConfig(n_layer=2, n_embd=64, n_head=4, n_mlp=256, n_ctx=128),
}
DEFAULT_PRESET = "gpt2-small"


def preset(name: str) -> ModelConfig:
    """The preset called `name`; a ValueError lists the valid names."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown model preset {name!r}; choose one of {', '.join(PRESETS)}") from None
