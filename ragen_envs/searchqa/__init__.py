"""Multi-hop search QA env (``ragen/SearchQA-v0``): generated world, questions, text solver, retrieval, your data.

Nothing is imported here, so ``import ragen_envs`` stays light; see :mod:`ragen_envs.searchqa.env` for the manual.
"""
