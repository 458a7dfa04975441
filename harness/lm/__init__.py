"""Language-model internals on token ids, for transformers causal LMs (torch; imported lazily).

:mod:`harness.lm.generation`
    Batched, per-row seeded sampling over a KV cache (:func:`~harness.lm.generation.generate_ids`).
:mod:`harness.lm.scoring`
    Teacher-forced log-probs: one pair at a time (:func:`~harness.lm.scoring.score_ids`) or every continuation
    under every prompt on shared KV caches (:func:`~harness.lm.scoring.score_matrix_ids`).
:mod:`harness.lm.kv_cache`
    What both build on: the KV cache's forward keyword, an in-place growing cache layer, a row's keys/values
    kept for the next turn (:class:`~harness.lm.kv_cache.CachedPrefix`) and row selection.

Used by the ``hf:``/``tiny`` agents, ``baselines.tiny.serve`` and the learner (``baselines.ppo``).
"""
