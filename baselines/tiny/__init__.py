"""The tiny shipped LM: a small causal LM trained by behaviour cloning on our envs' oracles.

``baselines/tiny/model/`` holds the weights (safetensors), the tokenizer and its chat template; it loads
offline like any checkpoint: ``AutoModelForCausalLM.from_pretrained(MODEL_DIR)``. Retrain it with
``python -m baselines.tiny.train`` (see that module for the recipe).
"""

from pathlib import Path

MODEL_DIR = Path(__file__).resolve().parent / "model"
"""The shipped tiny model's folder (weights, tokenizer, chat template)."""

__all__ = ["MODEL_DIR"]
