"""The weight reload the learner's vLLM engine runs inside vLLM's worker (``worker_extension_cls``).

vLLM mixes this class into its worker, so :meth:`WeightSync.ragen_reload` runs where the model lives and is
called by name through ``LLM.collective_rpc``: only a path crosses the process boundary, no pickled code (which
vLLM refuses without ``VLLM_ALLOW_INSECURE_SERIALIZATION``). Kept free of project imports: vLLM's engine process
imports it by its dotted name.
"""

from __future__ import annotations


class WeightSync:
    """Worker mixin: reload the weights in place from a checkpoint directory."""

    def ragen_reload(self, weights_path: str) -> None:
        """Reload the weights in place from the checkpoint directory ``weights_path``, the tied LM head included."""
        # vLLM's in-place reload: every parameter the checkpoint holds is loaded and re-processed into the
        # kernel layout, into the same storage (CUDA graphs stay valid).
        self.reload_weights(weights_path=weights_path)
        # A tied LM head has no weights of its own in the checkpoint, so the reload never re-processes it. Its
        # weight *is* the input embedding, already updated, but processing may keep a derived copy: on CPU the
        # head's matrix product uses a weight packed at load time, which would stay the old one. Re-processing
        # every embedding-method layer (a no-op on GPU) rebuilds that from the current weight.
        from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

        for module in self.model_runner.get_model().modules():
            method = getattr(module, "quant_method", None)
            if isinstance(method, UnquantizedEmbeddingMethod):
                method.process_weights_after_loading(module)
